package update

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestValidateForStorage(t *testing.T) {
	cases := []struct {
		name string
		doc  bson.D
		code mongoerr.Code
		msg  string
	}{
		{name: "ok", doc: d("_id", 1, "a", d("$b", 1, "c.d", 2))},
		{name: "empty", doc: d()},
		{name: "dollar top level", doc: d("_id", 1, "$a", 1),
			code: mongoerr.DollarPrefixedFieldName, msg: "$a"},
		{name: "NUL in nested name", doc: d("_id", 1, "a", a(d("x\x00y", 1))),
			code: mongoerr.BadValue, msg: "NUL"},
		{name: "array _id", doc: d("_id", a(1)),
			code: mongoerr.InvalidIDField, msg: "The '_id' value cannot be of type array"},
		{name: "regex _id", doc: d("_id", bson.Regex{Pattern: "x"}),
			code: mongoerr.InvalidIDField, msg: "The '_id' value cannot be of type regex"},
		{name: "undefined _id", doc: d("_id", bson.Undefined{}),
			code: mongoerr.InvalidIDField, msg: "The '_id' value cannot be of type undefined"},
		{name: "document _id with dollar field", doc: d("_id", d("a", d("$b", 1))),
			code: mongoerr.DollarPrefixedFieldName, msg: "$b"},
		{name: "document _id", doc: d("_id", d("a", 1))},
		{name: "too large", doc: d("_id", 1, "s", strings.Repeat("x", maxBSONSize)),
			code: mongoerr.BSONObjectTooLarge, msg: "object to insert too large. size in bytes: 16777238, max size: 16777216"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateForStorage(tc.doc)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			checkErr(t, err, tc.code, tc.msg)
		})
	}
}

func TestValidateSizeLimitBoundary(t *testing.T) {
	// {_id: 1, s: "..."} costs 4+1 + (1+4+4) + (1+2+4+len+1) bytes.
	overhead := 4 + 1 + (1 + 4 + 4) + (1 + 2 + 4 + 1)
	ok := d("_id", int32(1), "s", strings.Repeat("x", maxBSONSize-overhead))
	if err := ValidateForStorage(ok); err != nil {
		t.Fatalf("document of exactly 16 MiB refused: %v", err)
	}
	big := d("_id", int32(1), "s", strings.Repeat("x", maxBSONSize-overhead+1))
	checkErr(t, ValidateForStorage(big), mongoerr.BSONObjectTooLarge, "16777217")
}

// encodedDocSize must agree with the driver's encoder for every type.
func TestEncodedSizeMatchesMarshal(t *testing.T) {
	oid := bson.NewObjectID()
	doc := d(
		"_id", oid, "d", 1.5, "s", "héllo", "o", d("x", int32(1)), "a", a(1, "x", a(), d()),
		"b", bson.Binary{Subtype: 0, Data: []byte{1, 2, 3}}, "b2", bson.Binary{Subtype: 2, Data: []byte{1}},
		"u", bson.Undefined{}, "t", true, "dt", bson.DateTime(5), "n", nil,
		"re", bson.Regex{Pattern: "a+", Options: "i"}, "p", bson.DBPointer{DB: "db.c", Pointer: oid},
		"js", bson.JavaScript("f()"), "sym", bson.Symbol("s"),
		"cws", bson.CodeWithScope{Code: "g()", Scope: d("v", int32(1))},
		"i", int32(1), "ts", bson.Timestamp{T: 1, I: 2}, "l", int64(3),
		"dec", dec128(t, "1.5"), "min", bson.MinKey{}, "max", bson.MaxKey{},
		"big", make(bson.A, 12),
	)
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := encodedDocSize(doc)
	if !ok || got != len(raw) {
		t.Fatalf("encodedDocSize = %d, %v; Marshal = %d", got, ok, len(raw))
	}
}

func TestEnsureID(t *testing.T) {
	in := d("a", 1, "_id", 2, "b", 3)
	out, id := EnsureID(in)
	checkDoc(t, out, d("_id", 2, "a", 1, "b", 3))
	if id != int32(2) {
		t.Fatalf("id = %v", id)
	}
	checkDoc(t, in, d("a", 1, "_id", 2, "b", 3))

	first := d("_id", "k", "a", 1)
	out, id = EnsureID(first)
	checkDoc(t, out, first)
	if id != "k" {
		t.Fatalf("id = %v", id)
	}

	out, id = EnsureID(d("a", 1))
	oid, ok := id.(bson.ObjectID)
	if !ok || oid.IsZero() {
		t.Fatalf("generated id %#v", id)
	}
	checkDoc(t, out, d("_id", oid, "a", 1))
}
