package query

import (
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestParseSort(t *testing.T) {
	good := []string{
		`{}`, `{"a": 1}`, `{"a": -1}`, `{"a": 1.0, "b": {"$numberLong": "-1"}}`,
		`{"a": {"$numberDecimal": "-1.0"}}`, `{"$natural": 1}`,
	}
	for _, s := range good {
		if _, err := ParseSort(ej(t, s)); err != nil {
			t.Errorf("ParseSort(%s): %v", s, err)
		}
	}
	bad := []string{
		`{"a": 2}`, `{"a": 0}`, `{"a": "asc"}`, `{"a": true}`, `{"a": {"$meta": "textScore"}}`,
		`{"$foo": 1}`, `{"": 1}`, `{"a..b": 1}`, `{"$natural": 3}`,
	}
	for _, s := range bad {
		_, err := ParseSort(ej(t, s))
		if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.BadValue {
			t.Errorf("ParseSort(%s) = %v, want BadValue", s, err)
		}
	}
}

func TestSortByID(t *testing.T) {
	cases := []struct {
		spec    string
		asc, ok bool
		empty   bool
	}{
		{`{"_id": 1}`, true, true, false},
		{`{"_id": -1}`, false, true, false},
		{`{"_id": 1, "a": 1}`, false, false, false},
		{`{"a": 1}`, false, false, false},
		{`{}`, false, false, true},
		{`{"$natural": -1}`, false, false, true},
	}
	for _, c := range cases {
		s, err := ParseSort(ej(t, c.spec))
		if err != nil {
			t.Fatal(err)
		}
		asc, ok := s.ByIDOnly()
		if asc != c.asc || ok != c.ok || s.IsEmpty() != c.empty {
			t.Errorf("%s: ByIDOnly = %v,%v IsEmpty = %v", c.spec, asc, ok, s.IsEmpty())
		}
	}
}

// sortIDs sorts docs by spec and returns their _id strings in order.
func sortIDs(t *testing.T, spec string, docs []bson.D) string {
	t.Helper()
	s, err := ParseSort(ej(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	docs = slices.Clone(docs)
	slices.SortStableFunc(docs, s.Compare)
	var ids []string
	for _, d := range docs {
		v, _ := Lookup(d, "_id")
		ids = append(ids, v.(string))
	}
	return strings.Join(ids, " ")
}

func TestSortCompare(t *testing.T) {
	docs := []bson.D{
		ej(t, `{"_id": "num5", "a": 5}`),
		ej(t, `{"_id": "missing"}`),
		ej(t, `{"_id": "str", "a": "x"}`),
		ej(t, `{"_id": "arr", "a": [7, 1]}`),
		ej(t, `{"_id": "empty", "a": []}`),
		ej(t, `{"_id": "null", "a": null}`),
		ej(t, `{"_id": "long3", "a": {"$numberLong": "3"}}`),
	}
	// Ascending uses an array's smallest element (1), descending its largest
	// (7); an empty array sorts below null and missing, which tie.
	if got, want := sortIDs(t, `{"a": 1}`, docs), "empty missing null arr long3 num5 str"; got != want {
		t.Errorf("ascending: %s, want %s", got, want)
	}
	if got, want := sortIDs(t, `{"a": -1}`, docs), "str arr num5 long3 missing null empty"; got != want {
		t.Errorf("descending: %s, want %s", got, want)
	}

	two := []bson.D{
		ej(t, `{"_id": "a1b2", "a": 1, "b": 2}`),
		ej(t, `{"_id": "a1b1", "a": 1, "b": 1}`),
		ej(t, `{"_id": "a0b9", "a": 0, "b": 9}`),
	}
	if got, want := sortIDs(t, `{"a": 1, "b": -1}`, two), "a0b9 a1b2 a1b1"; got != want {
		t.Errorf("two keys: %s, want %s", got, want)
	}

	nested := []bson.D{
		ej(t, `{"_id": "x", "a": [{"b": 4}, {"b": 2}]}`),
		ej(t, `{"_id": "y", "a": {"b": 3}}`),
		ej(t, `{"_id": "z", "a": [{"b": 5}, {"c": 1}]}`),
	}
	// z reaches 5 and a missing b (null): ascending it sorts by null.
	if got, want := sortIDs(t, `{"a.b": 1}`, nested), "z x y"; got != want {
		t.Errorf("dotted ascending: %s, want %s", got, want)
	}
	if got, want := sortIDs(t, `{"a.b": -1}`, nested), "z x y"; got != want {
		t.Errorf("dotted descending: %s, want %s", got, want)
	}
}
