package storage

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sameColumn compares what a write stores with what pgx reads back.
func TestSameColumn(t *testing.T) {
	cases := []struct {
		want, got any
		same      bool
	}{
		{[]byte("k"), []byte("k"), true},
		{[]byte("k"), []byte("j"), false},
		{[]byte(nil), nil, true},       // SQL NULL: a multikey document
		{[]byte(nil), []byte{}, false}, // NULL is not the empty key
		{[]byte{}, []byte{}, true},
		{[]byte{}, nil, false},
		{[][]byte{[]byte("a"), []byte("b")}, []any{[]byte("a"), []byte("b")}, true},
		{[][]byte{[]byte("a")}, []any{[]byte("b")}, false},
		{[][]byte{[]byte("a")}, nil, false},
	}
	for i, c := range cases {
		if got := sameColumn(c.want, c.got); got != c.same {
			t.Errorf("case %d: sameColumn(%v, %v) = %v", i, c.want, c.got, got)
		}
	}
}

// checkRow flags a document that is not BSON and an index key that is not
// the document's, and counts keys the way MongoDB does.
func TestCheckRow(t *testing.T) {
	c := newCollection("d", "c", "00000000-0000-0000-0000-000000000000", "c1_d_c", []Index{{Name: "tags_1", Keys: []IndexKey{{Field: "tags"}}, Column: "k1"}})
	doc := bson.D{{Key: "_id", Value: int32(1)}, {Key: "tags", Value: bson.A{"a", "b"}}}
	raw, _ := bson.Marshal(doc)
	good, err := c.rowValues(int32(1), doc, raw)
	if err != nil {
		t.Fatal(err)
	}
	v := &Validation{KeysPerIndex: map[string]int64{}}
	v.checkRow(c, good)
	if !v.Valid() || v.KeysPerIndex["tags_1"] != 2 || v.KeysPerIndex["_id_"] != 1 {
		t.Fatalf("sound row: %+v", v)
	}
	bad := append([]any(nil), good...)
	bad[2] = []byte("not the key")
	v.checkRow(c, bad)
	if v.Valid() || len(v.Errors) != 1 {
		t.Fatalf("wrong key not found: %+v", v)
	}
	v.checkRow(c, []any{good[0], []byte{5, 0, 0, 0, 1}, good[2]})
	if v.InvalidDocuments != 1 || v.Records != 3 {
		t.Fatalf("corrupt document not found: %+v", v)
	}
}
