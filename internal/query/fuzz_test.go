package query

import (
	"bytes"
	"regexp"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

var placeholder = regexp.MustCompile(`\$[0-9]+`)

func marshalSeed(t testing.TB, d bson.D) []byte {
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseFilterMatch checks that no filter, valid or not, makes parsing,
// matching, SQL generation or Equalities panic, and that parse failures are
// client-visible errors.
func FuzzParseFilterMatch(f *testing.F) {
	for _, c := range matchCases {
		f.Add(marshalSeed(f, ej(f, c.filter)), marshalSeed(f, ej(f, c.doc)))
	}
	cols := []KeyColumn{
		{Column: "_id", Fields: []string{"_id"}},
		{Column: "k_a", Fields: []string{"a"}, Nullable: true},
		{Column: "k_ab", Fields: []string{"a", "b"}, Nullable: true},
	}
	f.Fuzz(func(t *testing.T, filterBytes, docBytes []byte) {
		var filter, doc bson.D
		if bson.Unmarshal(filterBytes, &filter) != nil || bson.Unmarshal(docBytes, &doc) != nil {
			return
		}
		flt, err := ParseFilter(filter)
		if err != nil {
			if _, ok := mongoerr.As(err); !ok {
				t.Fatalf("ParseFilter error is not a mongoerr: %v", err)
			}
			return
		}
		flt.Match(doc)
		flt.Equalities()
		where, args := flt.SQL(cols, 1)
		if n := len(placeholder.FindAllString(where, -1)); where == "" || n != len(args) {
			t.Fatalf("SQL %q has %d placeholders for %d args", where, n, len(args))
		}
		if s, err := ParseSort(filter); err == nil {
			s.Compare(doc, filter)
		}
	})
}

// FuzzKeyOrder checks AppendKey against Compare on arbitrary documents.
func FuzzKeyOrder(f *testing.F) {
	groups := orderedGroups(f)
	for i := 0; i+1 < len(groups); i++ {
		a := bson.D{{Key: "v", Value: groups[i][0]}}
		b := bson.D{{Key: "v", Value: groups[i+1][0]}}
		if _, isNull := groups[i][0].(bson.Null); isNull {
			continue
		}
		f.Add(marshalSeed(f, a), marshalSeed(f, b))
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var a, b bson.D
		if bson.Unmarshal(x, &a) != nil || bson.Unmarshal(y, &b) != nil {
			return
		}
		c := Compare(a, b)
		if k := sign(bytes.Compare(AppendKey(nil, a), AppendKey(nil, b))); k != c {
			t.Fatalf("Compare = %d, keys compare %d: %v vs %v", c, k, a, b)
		}
		if Compare(b, a) != -c || Compare(a, a) != 0 {
			t.Fatalf("Compare inconsistent on %v, %v", a, b)
		}
	})
}
