package update

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

type applyCase struct {
	name    string
	doc     bson.D
	update  bson.D
	upsert  bool
	want    bson.D
	changed bool
	code    mongoerr.Code // expected error code; 0 for success
	msg     string        // expected substring of the error message
}

var fixedNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseWithOptions(tc.update, Options{Now: func() time.Time { return fixedNow }})
			if err != nil {
				if tc.code == 0 {
					t.Fatalf("Parse: %v", err)
				}
				checkErr(t, err, tc.code, tc.msg)
				return
			}
			before := copyDoc(tc.doc)
			got, changed, err := u.Apply(tc.doc, tc.upsert)
			if !identical(before, tc.doc) {
				t.Fatalf("input modified: %s", formatValue(tc.doc))
			}
			if tc.code != 0 {
				checkErr(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			checkDoc(t, got, tc.want)
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}

func TestSet(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "existing field in place",
			doc: d("_id", 1, "a", 1, "b", 2), update: d("$set", d("a", 5)),
			want: d("_id", 1, "a", 5, "b", 2), changed: true},
		{name: "new fields appended in path order",
			doc: d("_id", 1), update: d("$set", d("z", 1, "b", 2, "a.c", 3)),
			want: d("_id", 1, "a", d("c", 3), "b", 2, "z", 1), changed: true},
		{name: "numeric components in numeric order",
			doc: d("_id", 1), update: d("$set", d("x.10", 1, "x.9", 2)),
			want: d("_id", 1, "x", d("9", 2, "10", 1)), changed: true},
		{name: "same value is no change",
			doc: d("_id", 1, "a", int32(1)), update: d("$set", d("a", int32(1))),
			want: d("_id", 1, "a", int32(1)), changed: false},
		{name: "same number other type is a change",
			doc: d("_id", 1, "a", int32(1)), update: d("$set", d("a", 1.0)),
			want: d("_id", 1, "a", 1.0), changed: true},
		{name: "dotted creates intermediate documents",
			doc: d("_id", 1), update: d("$set", d("a.b.c", "x")),
			want: d("_id", 1, "a", d("b", d("c", "x"))), changed: true},
		{name: "dotted into existing subdocument",
			doc: d("_id", 1, "a", d("x", 1)), update: d("$set", d("a.y", 2)),
			want: d("_id", 1, "a", d("x", 1, "y", 2)), changed: true},
		{name: "array index",
			doc: d("_id", 1, "a", a(1, 2, 3)), update: d("$set", d("a.1", "x")),
			want: d("_id", 1, "a", a(1, "x", 3)), changed: true},
		{name: "array index past end pads with null",
			doc: d("_id", 1, "a", a(1)), update: d("$set", d("a.3", 4)),
			want: d("_id", 1, "a", a(1, nil, nil, 4)), changed: true},
		{name: "field inside array element",
			doc: d("_id", 1, "a", a(d("b", 1), d("b", 2))), update: d("$set", d("a.1.b", 3)),
			want: d("_id", 1, "a", a(d("b", 1), d("b", 3))), changed: true},
		{name: "new element created as document",
			doc: d("_id", 1, "a", a()), update: d("$set", d("a.0.b", 3)),
			want: d("_id", 1, "a", a(d("b", 3))), changed: true},
		{name: "numeric component on missing field makes a document",
			doc: d("_id", 1), update: d("$set", d("a.0", 3)),
			want: d("_id", 1, "a", d("0", 3)), changed: true},
		{name: "numeric component is a field name in a document",
			doc: d("_id", 1, "a", d("0", 1)), update: d("$set", d("a.0", 3)),
			want: d("_id", 1, "a", d("0", 3)), changed: true},
		{name: "through a scalar",
			doc: d("_id", 1, "a", 5), update: d("$set", d("a.b", 1)),
			code: mongoerr.PathNotViable, msg: "Cannot create field 'b' in element {a: 5}"},
		{name: "through null",
			doc: d("_id", 1, "a", nil), update: d("$set", d("a.b", 1)),
			code: mongoerr.PathNotViable, msg: "Cannot create field 'b' in element {a: null}"},
		{name: "non-numeric into array",
			doc: d("_id", 1, "a", a(1, 2)), update: d("$set", d("a.b", 1)),
			code: mongoerr.PathNotViable, msg: "Cannot create field 'b' in element {a: [ 1, 2 ]}"},
		{name: "deep through a string",
			doc: d("_id", 1, "a", d("b", "s")), update: d("$set", d("a.b.c", 1)),
			code: mongoerr.PathNotViable, msg: `Cannot create field 'c' in element {b: "s"}`},
		{name: "huge backfill refused",
			doc: d("_id", 1, "a", a()), update: d("$set", d("a.9999999", 1)),
			code: mongoerr.BadValue, msg: "backfill"},
		{name: "nested document value is stored",
			doc: d("_id", 1), update: d("$set", d("a", d("$x", a(1)))),
			want: d("_id", 1, "a", d("$x", a(1))), changed: true},
		{name: "empty $set",
			doc: d("_id", 1, "a", 1), update: d("$set", d()),
			want: d("_id", 1, "a", 1), changed: false},
		{name: "_id same value allowed",
			doc: d("_id", 1, "a", 1), update: d("$set", d("_id", 1)),
			want: d("_id", 1, "a", 1), changed: false},
		{name: "_id changed",
			doc: d("_id", 1, "a", 1), update: d("$set", d("_id", 2)),
			code: mongoerr.ImmutableField,
			msg:  "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{name: "_id subfield changed",
			doc: d("_id", d("x", 1)), update: d("$set", d("_id.x", 2)),
			code: mongoerr.ImmutableField, msg: "update on the path '_id.x'"},
		{name: "_id numeric type change is a modification",
			doc: d("_id", int32(1)), update: d("$set", d("_id", int64(1))),
			code: mongoerr.ImmutableField},
		{name: "_id may be set on upsert skeleton without one",
			doc: d(), update: d("$set", d("_id", 7)), upsert: true,
			want: d("_id", 7), changed: true},
	})
}

func TestSetOnInsert(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "ignored on update",
			doc: d("_id", 1), update: d("$setOnInsert", d("a", 1), "$set", d("b", 2)),
			want: d("_id", 1, "b", 2), changed: true},
		{name: "applied on upsert insert",
			doc: d("_id", 1), update: d("$setOnInsert", d("a", 1), "$set", d("b", 2)), upsert: true,
			want: d("_id", 1, "a", 1, "b", 2), changed: true},
		{name: "conflicts with $set even when not inserting",
			doc: d("_id", 1), update: d("$set", d("a", 1), "$setOnInsert", d("a", 2)),
			code: mongoerr.ConflictingUpdateOperators},
	})
}

func TestUnset(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "removes field keeping order",
			doc: d("_id", 1, "a", 1, "b", 2, "c", 3), update: d("$unset", d("b", "")),
			want: d("_id", 1, "a", 1, "c", 3), changed: true},
		{name: "missing is a no-op",
			doc: d("_id", 1, "a", 1), update: d("$unset", d("x", 1, "a.b", 1)),
			want: d("_id", 1, "a", 1), changed: false},
		{name: "dotted",
			doc: d("_id", 1, "a", d("b", 1, "c", 2)), update: d("$unset", d("a.b", 1)),
			want: d("_id", 1, "a", d("c", 2)), changed: true},
		{name: "array element becomes null",
			doc: d("_id", 1, "a", a(1, 2, 3)), update: d("$unset", d("a.1", 1)),
			want: d("_id", 1, "a", a(1, nil, 3)), changed: true},
		{name: "array out of range is a no-op",
			doc: d("_id", 1, "a", a(1)), update: d("$unset", d("a.5", 1, "a.x", 1)),
			want: d("_id", 1, "a", a(1)), changed: false},
		{name: "_id",
			doc: d("_id", 1, "a", 1), update: d("$unset", d("_id", 1)),
			code: mongoerr.ImmutableField, msg: "path '_id'"},
	})
}

func TestInc(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "int32", doc: d("_id", 1, "a", int32(1)), update: d("$inc", d("a", int32(2))),
			want: d("_id", 1, "a", int32(3)), changed: true},
		{name: "int32 overflow to int64", doc: d("_id", 1, "a", int32(math.MaxInt32)), update: d("$inc", d("a", int32(1))),
			want: d("_id", 1, "a", int64(math.MaxInt32)+1), changed: true},
		{name: "int32 underflow to int64", doc: d("_id", 1, "a", int32(math.MinInt32)), update: d("$inc", d("a", int32(-1))),
			want: d("_id", 1, "a", int64(math.MinInt32)-1), changed: true},
		{name: "int32 plus int64", doc: d("_id", 1, "a", int32(1)), update: d("$inc", d("a", int64(2))),
			want: d("_id", 1, "a", int64(3)), changed: true},
		{name: "int64 plus int32", doc: d("_id", 1, "a", int64(1)), update: d("$inc", d("a", int32(2))),
			want: d("_id", 1, "a", int64(3)), changed: true},
		{name: "int64 overflow", doc: d("_id", 1, "a", int64(math.MaxInt64)), update: d("$inc", d("a", int32(1))),
			code: mongoerr.BadValue,
			msg:  "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"},
		{name: "int with double", doc: d("_id", 1, "a", int32(1)), update: d("$inc", d("a", 0.5)),
			want: d("_id", 1, "a", 1.5), changed: true},
		{name: "double with int", doc: d("_id", 1, "a", 1.5), update: d("$inc", d("a", int64(1))),
			want: d("_id", 1, "a", 2.5), changed: true},
		{name: "decimal with int", doc: d("_id", 1, "a", dec128(t, "1.5")), update: d("$inc", d("a", int32(1))),
			want: d("_id", 1, "a", dec128(t, "2.5")), changed: true},
		{name: "int with decimal", doc: d("_id", 1, "a", int64(2)), update: d("$inc", d("a", dec128(t, "0.25"))),
			want: d("_id", 1, "a", dec128(t, "2.25")), changed: true},
		{name: "decimal with double rounds the double to 15 digits",
			doc: d("_id", 1, "a", dec128(t, "1")), update: d("$inc", d("a", 0.1)),
			want: d("_id", 1, "a", dec128(t, "1.100000000000000")), changed: true},
		{name: "missing field takes the increment",
			doc: d("_id", 1), update: d("$inc", d("a.b", int64(5))),
			want: d("_id", 1, "a", d("b", int64(5))), changed: true},
		{name: "zero increment is no change", doc: d("_id", 1, "a", int32(4)), update: d("$inc", d("a", int32(0))),
			want: d("_id", 1, "a", int32(4)), changed: false},
		{name: "array element", doc: d("_id", 1, "a", a(int32(1), int32(2))), update: d("$inc", d("a.1", int32(10))),
			want: d("_id", 1, "a", a(int32(1), int32(12))), changed: true},
		{name: "non-numeric field", doc: d("_id", 1, "a", "x"), update: d("$inc", d("a", int32(1))),
			code: mongoerr.TypeMismatch,
			msg:  "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"},
		{name: "non-numeric argument", doc: d("_id", 1), update: d("$inc", d("a", "x")),
			code: mongoerr.TypeMismatch, msg: `Cannot increment with non-numeric argument: {a: "x"}`},
		{name: "through scalar", doc: d("_id", 1, "a", true), update: d("$inc", d("a.b", int32(1))),
			code: mongoerr.PathNotViable, msg: "Cannot create field 'b' in element {a: true}"},
	})
}

func TestMul(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "int32", doc: d("_id", 1, "a", int32(3)), update: d("$mul", d("a", int32(4))),
			want: d("_id", 1, "a", int32(12)), changed: true},
		{name: "int32 overflow", doc: d("_id", 1, "a", int32(1<<20)), update: d("$mul", d("a", int32(1<<20))),
			want: d("_id", 1, "a", int64(1<<40)), changed: true},
		{name: "int64 overflow", doc: d("_id", 1, "a", int64(1<<40)), update: d("$mul", d("a", int64(1<<40))),
			code: mongoerr.BadValue, msg: "Failed to apply $mul operations"},
		{name: "min int64 times -1 overflows", doc: d("_id", 1, "a", int64(math.MinInt64)), update: d("$mul", d("a", int64(-1))),
			code: mongoerr.BadValue},
		{name: "double", doc: d("_id", 1, "a", int32(3)), update: d("$mul", d("a", 0.5)),
			want: d("_id", 1, "a", 1.5), changed: true},
		{name: "decimal", doc: d("_id", 1, "a", dec128(t, "1.5")), update: d("$mul", d("a", int32(3))),
			want: d("_id", 1, "a", dec128(t, "4.5")), changed: true},
		{name: "missing int32 gives int32 zero", doc: d("_id", 1), update: d("$mul", d("a", int32(3))),
			want: d("_id", 1, "a", int32(0)), changed: true},
		{name: "missing int64 gives int64 zero", doc: d("_id", 1), update: d("$mul", d("a", int64(3))),
			want: d("_id", 1, "a", int64(0)), changed: true},
		{name: "missing double gives double zero", doc: d("_id", 1), update: d("$mul", d("a", 2.5)),
			want: d("_id", 1, "a", 0.0), changed: true},
		{name: "times one is no change", doc: d("_id", 1, "a", int32(7)), update: d("$mul", d("a", int32(1))),
			want: d("_id", 1, "a", int32(7)), changed: false},
		{name: "non-numeric field", doc: d("_id", 1, "a", a()), update: d("$mul", d("a", int32(1))),
			code: mongoerr.TypeMismatch, msg: "Cannot apply $mul to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type array"},
		{name: "non-numeric argument", doc: d("_id", 1), update: d("$mul", d("a", nil)),
			code: mongoerr.TypeMismatch, msg: "Cannot multiply with non-numeric argument: {a: null}"},
	})
}

func TestCurrentDate(t *testing.T) {
	ms := bson.NewDateTimeFromTime(fixedNow)
	runApplyCases(t, []applyCase{
		{name: "true", doc: d("_id", 1), update: d("$currentDate", d("a", true)),
			want: d("_id", 1, "a", ms), changed: true},
		{name: "type date", doc: d("_id", 1), update: d("$currentDate", d("a.b", d("$type", "date"))),
			want: d("_id", 1, "a", d("b", ms)), changed: true},
		{name: "type timestamp", doc: d("_id", 1, "a", 1), update: d("$currentDate", d("a", d("$type", "timestamp"))),
			want: d("_id", 1, "a", bson.Timestamp{T: uint32(fixedNow.Unix()), I: 1}), changed: true},
		{name: "bad type", doc: d("_id", 1), update: d("$currentDate", d("a", d("$type", "x"))),
			code: mongoerr.BadValue, msg: "'date' or 'timestamp'"},
		{name: "bad option", doc: d("_id", 1), update: d("$currentDate", d("a", d("x", 1))),
			code: mongoerr.BadValue, msg: "Unrecognized $currentDate option: x"},
		{name: "bad argument", doc: d("_id", 1), update: d("$currentDate", d("a", int32(1))),
			code: mongoerr.BadValue, msg: "int is not valid type for $currentDate"},
	})
}

func TestRename(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "top level",
			doc: d("_id", 1, "a", 1, "b", 2), update: d("$rename", d("a", "c")),
			want: d("_id", 1, "b", 2, "c", 1), changed: true},
		{name: "onto existing field keeps its position",
			doc: d("_id", 1, "a", 1, "b", 2, "c", 3), update: d("$rename", d("c", "a")),
			want: d("_id", 1, "a", 3, "b", 2), changed: true},
		{name: "dotted source and destination",
			doc: d("_id", 1, "a", d("b", 1, "x", 0)), update: d("$rename", d("a.b", "c.d")),
			want: d("_id", 1, "a", d("x", 0), "c", d("d", 1)), changed: true},
		{name: "missing source is a no-op",
			doc: d("_id", 1, "b", 2), update: d("$rename", d("a", "b")),
			want: d("_id", 1, "b", 2), changed: false},
		{name: "same source and destination",
			doc: d("_id", 1), update: d("$rename", d("a", "a")),
			code: mongoerr.BadValue, msg: "The source and target field for $rename must differ"},
		{name: "destination inside source",
			doc: d("_id", 1), update: d("$rename", d("a", "a.b")),
			code: mongoerr.BadValue, msg: "must not be on the same path"},
		{name: "source inside destination",
			doc: d("_id", 1), update: d("$rename", d("a.b", "a")),
			code: mongoerr.BadValue, msg: "must not be on the same path"},
		{name: "target not a string",
			doc: d("_id", 1), update: d("$rename", d("a", int32(1))),
			code: mongoerr.BadValue, msg: "The 'to' field for $rename must be a string: a: 1"},
		{name: "empty target",
			doc: d("_id", 1), update: d("$rename", d("a", "")),
			code: codeEmptyFieldName},
		{name: "source in array",
			doc: d("_id", 1, "a", a(d("b", 1))), update: d("$rename", d("a.0.b", "c")),
			code: mongoerr.BadValue, msg: "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'"},
		{name: "destination in array",
			doc: d("_id", 1, "x", 1, "a", a(d("b", 1))), update: d("$rename", d("x", "a.0.c")),
			code: mongoerr.BadValue, msg: "The destination field cannot be an array element"},
		{name: "destination through scalar",
			doc: d("_id", 1, "x", 1, "a", 1), update: d("$rename", d("x", "a.c")),
			code: mongoerr.PathNotViable},
		{name: "_id as source",
			doc: d("_id", 1), update: d("$rename", d("_id", "x")),
			code: mongoerr.ImmutableField, msg: "path '_id'"},
		{name: "conflicts with $set on destination",
			doc: d("_id", 1), update: d("$rename", d("a", "b"), "$set", d("b", 1)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'b' would create a conflict at 'b'"},
		{name: "conflicts with $set on source",
			doc: d("_id", 1), update: d("$set", d("a.x", 1), "$rename", d("a", "b")),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a' would create a conflict at 'a'"},
	})
}

func TestConflictsAndParse(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "same path two operators", update: d("$set", d("a", 1), "$inc", d("a", int32(1))),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a' would create a conflict at 'a'"},
		{name: "longer path after prefix", update: d("$set", d("a", 1), "$unset", d("a.b", 1)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.b' would create a conflict at 'a'"},
		{name: "prefix after longer path", update: d("$set", d("a.b.c", 1, "a.b", 1)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.b' would create a conflict at 'a.b'"},
		{name: "duplicate in one operator", update: d("$set", d("a", 1, "a", 2)),
			code: mongoerr.ConflictingUpdateOperators},
		{name: "siblings do not conflict", doc: d("_id", 1), update: d("$set", d("a.b", 1, "a.bc", 2, "ab", 3)),
			want: d("_id", 1, "a", d("b", 1, "bc", 2), "ab", 3), changed: true},
		{name: "unknown operator", update: d("$foo", d("a", 1)),
			code: mongoerr.FailedToParse, msg: "Unknown modifier: $foo"},
		{name: "mixed operator then field", update: d("$set", d("a", 1), "b", 2),
			code: mongoerr.FailedToParse, msg: "Unknown modifier: b"},
		{name: "mixed field then operator", update: d("b", 2, "$set", d("a", 1)),
			code: mongoerr.DollarPrefixedFieldName, msg: "'$set'"},
		{name: "operator argument not a document", update: d("$set", int32(5)),
			code: mongoerr.FailedToParse, msg: "Modifiers operate on fields but we found type int instead"},
		{name: "empty path", update: d("$set", d("", 1)),
			code: codeEmptyFieldName, msg: "An empty update path is not valid."},
		{name: "empty component", update: d("$set", d("a..b", 1)),
			code: codeEmptyFieldName, msg: "'a..b' contains an empty field name"},
		{name: "trailing dot", update: d("$set", d("a.", 1)),
			code: codeEmptyFieldName},
		{name: "positional without a query match", update: d("$set", d("a.$", 1)),
			code: mongoerr.BadValue, msg: "The positional operator did not find the match needed from the query."},
		{name: "all positional on a missing array", update: d("$inc", d("a.$[].b", int32(1))),
			code: mongoerr.BadValue, msg: "The path 'a' must exist in the document in order to apply array updates."},
		{name: "dollar field", update: d("$set", d("a.$b", 1)),
			code: mongoerr.DollarPrefixedFieldName, msg: "'$b'"},
		{name: "empty update document replaces", doc: d("_id", 1, "a", 1), update: d(),
			want: d("_id", 1), changed: true},
		{name: "several operators", doc: d("_id", 1, "n", int32(1), "l", a(1)),
			update: d("$inc", d("n", int32(1)), "$push", d("l", 2), "$set", d("s", "x")),
			want:   d("_id", 1, "n", int32(2), "l", a(1, 2), "s", "x"), changed: true},
	})
}

func TestParseNonDocuments(t *testing.T) {
	_, err := Parse(bson.A{d("$set", d("a", 1))})
	checkErr(t, err, mongoerr.InternalError, "compiled by exec")
	_, err = Parse(int32(3))
	checkErr(t, err, mongoerr.TypeMismatch, "")
	raw, err := bson.Marshal(d("$set", d("a", int32(1))))
	if err != nil {
		t.Fatal(err)
	}
	u, err := Parse(bson.Raw(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := u.Apply(d("_id", 1), false)
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, got, d("_id", 1, "a", int32(1)))
	if u.IsReplacement() {
		t.Fatal("operator update reported as replacement")
	}
}

func TestReplacement(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "keeps _id first",
			doc: d("_id", 1, "a", 1), update: d("b", 2, "c", d("$x", 1)),
			want: d("_id", 1, "b", 2, "c", d("$x", 1)), changed: true},
		{name: "same _id repeated, moved first",
			doc: d("_id", 1, "a", 1), update: d("b", 2, "_id", 1),
			want: d("_id", 1, "b", 2), changed: true},
		{name: "identical is no change",
			doc: d("_id", 1, "a", 1), update: d("a", 1),
			want: d("_id", 1, "a", 1), changed: false},
		{name: "different _id",
			doc: d("_id", 1, "a", 1), update: d("_id", 2),
			code: mongoerr.ImmutableField, msg: "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"},
		{name: "no _id anywhere",
			doc: d(), update: d("a", 1), upsert: true,
			want: d("a", 1), changed: true},
	})
	u, err := Parse(d("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !u.IsReplacement() {
		t.Fatal("replacement not reported")
	}
}

// An Update is reused across documents; results must not share storage
// with the update or with each other.
func TestApplyResultsAreIndependent(t *testing.T) {
	spec := d("$set", d("a", d("b", a(1))), "$push", d("l", d("x", 1)))
	u, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	r1, _, err := u.Apply(d("_id", 1, "l", a()), false)
	if err != nil {
		t.Fatal(err)
	}
	r1[2].Value.(bson.D)[0].Value.(bson.A)[0] = "mutated"
	r1[1].Value.(bson.A)[0].(bson.D)[0].Value = "mutated"
	r2, _, err := u.Apply(d("_id", 2, "l", a()), false)
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, r2, d("_id", 2, "l", a(d("x", 1)), "a", d("b", a(1))))
	checkDoc(t, spec, d("$set", d("a", d("b", a(1))), "$push", d("l", d("x", 1))))
}

// A parsed Update and Projection are shared by concurrent requests; run
// with -race this fails if applying either writes to shared state.
func TestConcurrentUse(t *testing.T) {
	u, err := Parse(d("$push", d("l", d("$each", a(d("x", 1)), "$sort", d("x", -1))), "$inc", d("n", int32(1)), "$set", d("s.t", a(1))))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProjection(d("l", d("$slice", int32(1)), "s", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := d("_id", 1, "n", int32(1), "l", a(d("x", 0)))
	done := make(chan bson.D)
	for range 4 {
		go func() {
			out, _, err := u.Apply(doc, false)
			if err != nil {
				t.Error(err)
			}
			projected, err := p.Apply(out)
			if err != nil {
				t.Error(err)
			}
			done <- projected
		}()
	}
	for range 4 {
		checkDoc(t, <-done, d("_id", 1, "n", int32(2), "l", a(d("x", 1))))
	}
}
