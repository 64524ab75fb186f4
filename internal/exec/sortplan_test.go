package exec

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
	"tierdb/internal/storage"
)

func ix(name, column string, fields ...string) storage.Index {
	out := storage.Index{Name: name, Column: column}
	for _, f := range fields {
		desc := false
		if f[0] == '-' {
			desc, f = true, f[1:]
		}
		out.Keys = append(out.Keys, storage.IndexKey{Field: f, Desc: desc})
	}
	return out
}

func mustSort(t *testing.T, spec bson.D) query.Sort {
	t.Helper()
	s, err := query.ParseSort(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pinnedBy(t *testing.T, filter bson.D) map[string]bool {
	t.Helper()
	f, err := query.ParseFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	return f.PinnedPaths()
}

func TestPlanIndexSortPicksTheIndexThatServesTheSort(t *testing.T) {
	indexes := []storage.Index{
		ix("_id_", "_id", "_id"),
		ix("a_1", "k_1", "a"),
		ix("g_1_a_1", "k_2", "g", "a"),
		ix("a_1_b_-1", "k_3", "a", "-b"),
		ix("x_-1", "k_4", "-x"),
	}
	cases := []struct {
		name   string
		sort   bson.D
		filter bson.D
		index  string // "" means no index serves it
		desc   bool
		idDesc bool
		exact  bool
	}{
		{"ascending", bson.D{{Key: "a", Value: 1}}, nil, "a_1", false, false, true},
		{"descending", bson.D{{Key: "a", Value: -1}}, nil, "a_1", true, false, true},
		{"_id tail", bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: -1}}, nil, "a_1", false, true, true},
		{"descending index ascending sort", bson.D{{Key: "x", Value: 1}}, nil, "x_-1", false, false, true},
		{"both keys one direction", bson.D{{Key: "a", Value: -1}, {Key: "b", Value: -1}}, nil, "a_1_b_-1", true, false, true},
		{"mixed directions", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}, nil, "", false, false, false},
		{"pinned prefix", bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "g", Value: 3}}, "g_1_a_1", false, false, true},
		{"pinned by $eq in $and", bson.D{{Key: "a", Value: -1}}, bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "g", Value: bson.D{{Key: "$eq", Value: "s"}}}}}}}, "g_1_a_1", true, false, true},
		{"a range pins nothing", bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "g", Value: bson.D{{Key: "$gt", Value: 3}}}}, "a_1", false, false, true},
		{"unindexed", bson.D{{Key: "b", Value: 1}}, nil, "", false, false, false},
		{"not a prefix", bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 1}}, nil, "", false, false, false},
		{"_id tail needs the whole index", bson.D{{Key: "g", Value: 1}, {Key: "_id", Value: 1}}, nil, "", false, false, false},
		{"prefix of a compound index", bson.D{{Key: "g", Value: 1}}, nil, "g_1_a_1", false, false, false},
		{"_id alone is the primary key's business", bson.D{{Key: "_id", Value: 1}}, nil, "", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := planIndexSort(indexes, mustSort(t, c.sort), pinnedBy(t, c.filter))
			if c.index == "" {
				if ok {
					t.Fatalf("served by %s, want none", p.index.Name)
				}
				return
			}
			if !ok || p.index.Name != c.index || p.desc != c.desc || p.idDesc != c.idDesc || p.exact != c.exact {
				t.Fatalf("got %+v (ok %v), want %s desc=%v idDesc=%v exact=%v", p, ok, c.index, c.desc, c.idDesc, c.exact)
			}
		})
	}
}

func TestPinnedPathsAreScalarEqualitiesOnly(t *testing.T) {
	p := pinnedBy(t, bson.D{
		{Key: "n", Value: 1}, {Key: "s", Value: "x"}, {Key: "e", Value: bson.D{{Key: "$eq", Value: true}}},
		{Key: "null", Value: nil}, {Key: "arr", Value: bson.A{1}}, {Key: "doc", Value: bson.D{{Key: "x", Value: 1}}},
		{Key: "re", Value: bson.Regex{Pattern: "^a"}}, {Key: "r", Value: bson.D{{Key: "$gt", Value: 1}}},
	})
	for _, k := range []string{"n", "s", "e"} {
		if !p[k] {
			t.Errorf("%s not pinned", k)
		}
	}
	for _, k := range []string{"null", "arr", "doc", "re", "r"} {
		if p[k] {
			t.Errorf("%s pinned", k)
		}
	}
}

func TestIndexServesOrderRefusesUnknownOptions(t *testing.T) {
	plain := ix("a_1", "k_1", "a")
	if !indexServesOrder(&plain) {
		t.Fatal("a plain index must serve order")
	}
	unique := plain
	unique.Unique = true
	if !indexServesOrder(&unique) {
		t.Fatal("a unique index must serve order")
	}
	ttl := plain
	ttl.ExpireAfterSeconds = new(int64)
	if !indexServesOrder(&ttl) {
		t.Fatal("a TTL index must serve order")
	}
	refused := map[string]func(*storage.Index){
		"sparse":  func(ix *storage.Index) { ix.Sparse = true },
		"hidden":  func(ix *storage.Index) { ix.Hidden = true },
		"partial": func(ix *storage.Index) { ix.Partial = []byte{5, 0, 0, 0, 0} },
		"text":    func(ix *storage.Index) { ix.Text = &storage.TextIndex{} },
		"hashed":  func(ix *storage.Index) { ix.Keys = []storage.IndexKey{{Field: "a", Hashed: true}} },
		"textKey": func(ix *storage.Index) { ix.Keys = []storage.IndexKey{{Field: "a", Text: true}} },
	}
	for name, set := range refused {
		x := ix("a_1", "k_1", "a")
		set(&x)
		if indexServesOrder(&x) {
			t.Errorf("a %s index must not serve order", name)
		}
		if _, ok := planIndexSort([]storage.Index{x}, mustSort(t, bson.D{{Key: "a", Value: 1}}), nil); ok {
			t.Errorf("planIndexSort walks a %s index", name)
		}
	}
	// The option check works on the catalog JSON: an option with a zero
	// value is as good as absent, any other disqualifies.
	for _, k := range []string{"name", "keys", "column", "unique", "sparse", "hidden"} {
		if !onlyKnownJSON(t, `{"`+k+`": false}`) {
			t.Errorf("zero %s refused", k)
		}
	}
	for _, j := range []string{`{"sparse": true}`, `{"hidden": true}`, `{"partial": "BQAAAAA="}`, `{"text": {"weights": []}}`, `{"kind": "text"}`} {
		if onlyKnownJSON(t, j) {
			t.Errorf("%s accepted", j)
		}
	}
}

func onlyKnownJSON(t *testing.T, j string) bool {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(j), &raw); err != nil {
		t.Fatal(err)
	}
	return onlyKnown(raw, knownIndexOptions)
}

// The walk's order is bytes.Compare of the key column; the in-memory sort
// is query.Sort.Compare. For documents that are not multikey they must
// agree, across types, for every sort the planner lets an index serve.
func TestKeyColumnOrderIsTheSortOrder(t *testing.T) {
	values := []any{
		nil, bson.MinKey{}, bson.MaxKey{}, int32(-3), int64(2), 2.5, -0.0, 0.0, bson.NewDecimal128(0, 25),
		"", "a", "a\x00", "ab", "B", bson.D{{Key: "x", Value: int32(1)}}, bson.D{}, true, false,
		bson.DateTime(5), bson.Timestamp{T: 1, I: 2}, bson.ObjectID{1}, bson.Binary{Data: []byte{1}},
		bson.Regex{Pattern: "a"}, math.NaN(), math.Inf(-1), math.Inf(1), int64(1) << 62, float64(1 << 62),
	}
	var docs []bson.D
	for i, a := range values {
		for j, b := range values {
			if (i+j)%3 == 0 {
				docs = append(docs, bson.D{{Key: "a", Value: a}, {Key: "b", Value: b}})
			}
		}
		docs = append(docs, bson.D{{Key: "b", Value: a}}) // a missing
	}
	for _, spec := range []bson.D{
		{{Key: "a", Value: 1}}, {{Key: "a", Value: -1}},
		{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, {{Key: "a", Value: -1}, {Key: "b", Value: -1}},
	} {
		s := mustSort(t, spec)
		fields := []string{}
		for _, f := range s.Fields() {
			fields = append(fields, f.Path)
		}
		desc := s.Fields()[0].Desc
		for _, x := range docs {
			kx, okx := query.IndexKey(x, fields)
			for _, y := range docs {
				ky, oky := query.IndexKey(y, fields)
				if !okx || !oky {
					t.Fatal("no array here: every key must exist")
				}
				byKey := bytes.Compare(kx, ky)
				if desc {
					byKey = -byKey
				}
				if got := s.Compare(x, y); sign(got) != sign(byKey) {
					t.Fatalf("sort %v: %v vs %v: Compare %d, key order %d", spec, x, y, got, byKey)
				}
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
