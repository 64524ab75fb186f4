package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestImpliesCases(t *testing.T) {
	cases := []struct {
		query, partial string
		want           bool
	}{
		{`{"a": 5}`, `{"a": {"$exists": true}}`, true},
		{`{"a": null}`, `{"a": {"$exists": true}}`, false},
		{`{"a": {"$gt": 6}}`, `{"a": {"$gt": 5}}`, true},
		{`{"a": {"$gte": 5}}`, `{"a": {"$gt": 5}}`, false},
		{`{"a": {"$gt": 5}}`, `{"a": {"$gte": 5}}`, true},
		{`{"a": {"$gt": "z"}}`, `{"a": {"$gt": 5}}`, false},
		{`{"a": {"$lt": 3}}`, `{"a": {"$lte": 3}}`, true},
		{`{"a": {"$lte": 3}}`, `{"a": {"$lt": 3}}`, false},
		{`{"a": {"$in": [6, 7]}}`, `{"a": {"$gt": 5}}`, true},
		{`{"a": {"$in": [6, 5]}}`, `{"a": {"$gt": 5}}`, false},
		{`{"a": {"$in": [6, null]}}`, `{"a": {"$exists": true}}`, false},
		{`{"k": "x", "a": 1}`, `{"k": "x"}`, true},
		{`{"k": "y"}`, `{"k": "x"}`, false},
		{`{"k": "x"}`, `{"k": {"$in": ["x", "y"]}}`, true},
		{`{"$and": [{"k": "x"}, {"n": {"$gt": 10}}]}`, `{"k": "x", "n": {"$gte": 10}}`, true},
		{`{"k": "x"}`, `{"k": "x", "n": {"$gte": 10}}`, false},
		{`{"$or": [{"k": "x"}]}`, `{"k": "x"}`, false},
		{`{"k": "x"}`, `{"$or": [{"k": "x"}, {"k": "y"}]}`, false},
		{`{"a": {"$type": "string"}}`, `{"a": {"$type": "string"}}`, true},
		{`{"a": {"$type": "string"}}`, `{"a": {"$exists": true}}`, true},
		{`{"a": {"$exists": true}}`, `{"a": {"$exists": true}}`, true},
		{`{"a": 1.0}`, `{"a": 1}`, true},
		{`{"a": {"$gt": {"$numberDouble": "NaN"}}}`, `{"a": {"$exists": true}}`, false},
	}
	for _, c := range cases {
		q, err := ParseFilter(ej(t, c.query))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseFilter(ej(t, c.partial))
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Implies(p); got != c.want {
			t.Errorf("%s implies %s: got %v, want %v", c.query, c.partial, got, c.want)
		}
	}
}

// TestImpliesIsSound checks, over the query corpus, that whenever a query
// implies a partial filter, every document the query matches also matches
// the filter: the property that makes using a partial index correct.
func TestImpliesIsSound(t *testing.T) {
	docs := buildCorpus(t, 300)
	filters := corpusFilters(t, docs)
	var partials []*Filter
	for _, fd := range filters {
		if CheckPartialFilter(fd) != nil {
			continue
		}
		p, err := ParseFilter(fd)
		if err != nil {
			t.Fatal(err)
		}
		partials = append(partials, p)
	}
	for _, path := range []string{"a", "b"} {
		p, _ := ParseFilter(bson.D{{Key: path, Value: bson.D{{Key: "$exists", Value: true}}}})
		partials = append(partials, p)
	}
	implied := 0
	for _, fd := range filters {
		q, err := ParseFilter(fd)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range partials {
			if !q.Implies(p) {
				continue
			}
			implied++
			for _, d := range docs {
				if q.Match(d) && !p.Match(d) {
					t.Fatalf("%v implies %v, yet %v matches only the first", fd, p.raw, d)
				}
			}
		}
	}
	if implied < len(filters) {
		t.Errorf("only %d implications found over %d queries: the check is too weak to test", implied, len(filters))
	}
	t.Logf("%d implications checked over %d queries and %d partial filters", implied, len(filters), len(partials))
}

func TestCheckPartialFilter(t *testing.T) {
	ok := []string{`{"a": 1}`, `{"a": {"$gt": 1, "$lte": 5}}`, `{"a": {"$exists": true}}`, `{"a": {"$type": "string"}}`,
		`{"$and": [{"a": 1}, {"b": {"$in": [1, 2]}}]}`, `{"$or": [{"a": 1}, {"b": 2}]}`, `{"a.b": {"x": 1}}`}
	bad := []string{`{"a": {"$ne": 1}}`, `{"a": {"$exists": false}}`, `{"$nor": [{"a": 1}]}`, `{"a": {"$regex": "x"}}`,
		`{"$expr": {"$eq": ["$a", 1]}}`, `{"a": {"$not": {"$gt": 1}}}`, `{"a": {"$elemMatch": {"$gt": 1}}}`}
	for _, s := range ok {
		if err := CheckPartialFilter(ej(t, s)); err != nil {
			t.Errorf("%s refused: %v", s, err)
		}
	}
	for _, s := range bad {
		if err := CheckPartialFilter(ej(t, s)); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestHashedKey(t *testing.T) {
	if string(HashedKey(int32(1))) != string(HashedKey(1.0)) || string(HashedKey(int64(1))) != string(HashedKey(int32(1))) {
		t.Error("equal numbers hash differently")
	}
	if string(HashedKey("1")) == string(HashedKey(int32(1))) || len(HashedKey("x")) != 8 {
		t.Error("hash keys are not distinct 8-byte strings")
	}
	k, ok := IndexKeyHashed(bson.D{{Key: "a", Value: int32(3)}, {Key: "b", Value: "x"}}, []string{"a", "b"}, 0)
	if !ok || string(k) != string(append(HashedKey(int32(3)), AppendKey(nil, "x")...)) {
		t.Errorf("compound hashed key %x", k)
	}
	if _, ok := IndexKeyHashed(bson.D{{Key: "a", Value: bson.A{int32(1)}}}, []string{"a"}, 0); ok {
		t.Error("an array got a hashed key")
	}
}
