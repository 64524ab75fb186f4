package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// A $sort followed by $limit (or $skip and $limit) holds only the top
// documents: far more input than its memory limit sorts without disk, and
// the result is the full sort's first documents, ties in input order.
func TestSortThenLimitKeepsOnlyTheTop(t *testing.T) {
	old := sortMemoryBytes
	sortMemoryBytes = 20_000
	defer func() { sortMemoryBytes = old }()
	var input []bson.D
	for i := range 5000 {
		input = append(input, bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32((i * 7919) % 100)}})
	}
	full := append([]bson.D(nil), input...)
	s, err := query.ParseSort(parse(t, `{"k":-1}`))
	if err != nil {
		t.Fatal(err)
	}
	sortDocs(full, s)
	for _, c := range []struct {
		stages []string
		from   int
		n      int
	}{
		{[]string{`{"$sort":{"k":-1}}`, `{"$limit":7}`}, 0, 7},
		{[]string{`{"$sort":{"k":-1}}`, `{"$skip":45}`, `{"$limit":10}`}, 45, 10},
		{[]string{`{"$sort":{"k":-1}}`, `{"$limit":60}`, `{"$skip":50}`}, 50, 10},
	} {
		var stages []bson.D
		for _, s := range c.stages {
			stages = append(stages, parse(t, s))
		}
		got, err := run(t, &Env{}, input, stages...) // no disk use
		if err != nil {
			t.Fatalf("%v: %v", c.stages, err)
		}
		want := full[c.from : c.from+c.n]
		if len(got) != len(want) {
			t.Fatalf("%v: %d documents, want %d", c.stages, len(got), len(want))
		}
		for i := range want {
			w, _ := bson.MarshalExtJSON(want[i], false, false)
			if got[i] != string(w) {
				t.Fatalf("%v: at %d got %s, want %s", c.stages, i, got[i], w)
			}
		}
	}
	// Without a $limit right after it, $sort still holds everything.
	if _, err := run(t, &Env{}, input, parse(t, `{"$sort":{"k":-1}}`), parse(t, `{"$project":{"k":1}}`), parse(t, `{"$limit":3}`)); !hasCode(err, 292) {
		t.Fatalf("a $limit after another stage: %v", err)
	}
}
