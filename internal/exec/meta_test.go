package exec

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
)

var textScore = bson.D{{Key: "$meta", Value: "textScore"}}

// scoredInput is four documents and the text scores a $text search gave
// them.
func scoredInput() ([]bson.D, []float64) {
	docs := []bson.D{
		{{Key: "_id", Value: int32(1)}, {Key: "t", Value: "a"}},
		{{Key: "_id", Value: int32(2)}, {Key: "t", Value: "b"}},
		{{Key: "_id", Value: int32(3)}, {Key: "t", Value: "c"}},
		{{Key: "_id", Value: int32(4)}, {Key: "t", Value: "d"}},
	}
	return docs, []float64{1.5, 3, 0.75, 3}
}

// runScored runs a pipeline whose input carries text scores, as an
// aggregate with a leading $text $match does.
func runScored(t *testing.T, env *Env, st ...bson.D) ([]bson.D, error) {
	t.Helper()
	env.TextScore = &expr.Meta{}
	sink := &docsSink{what: "test"}
	head, err := Build(st, sink, env)
	if err != nil {
		return nil, err
	}
	docs, scores := scoredInput()
	for i, d := range docs {
		env.TextScore.TextScore = scores[i]
		if err := head.Push(d); err != nil {
			return nil, err
		}
	}
	return sink.docs, head.Finish()
}

func fieldOf(t *testing.T, d bson.D, name string) any {
	t.Helper()
	v, ok := lookup(d, name)
	if !ok {
		t.Fatalf("%v has no %s", d, name)
	}
	return v
}

// $sort by {$meta: "textScore"} orders by score, highest first, equal
// scores in input order; the score follows each document through the
// sort into a later $addFields, and an exclusion $project adds it.
func TestTextScoreSortAndFields(t *testing.T) {
	out, err := runScored(t, &Env{},
		bson.D{{Key: "$project", Value: bson.D{{Key: "s1", Value: textScore}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: textScore}}}},
		bson.D{{Key: "$addFields", Value: bson.D{{Key: "s2", Value: bson.D{{Key: "$multiply", Value: bson.A{textScore, int32(2)}}}}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []int32{2, 4, 1, 3}
	wantScores := []float64{3, 3, 1.5, 0.75}
	if len(out) != 4 {
		t.Fatalf("got %v", out)
	}
	for i, d := range out {
		if id := fieldOf(t, d, "_id"); id != wantIDs[i] {
			t.Fatalf("order %v, want ids %v", out, wantIDs)
		}
		if fieldOf(t, d, "t") == nil || fieldOf(t, d, "s1") != wantScores[i] || fieldOf(t, d, "s2") != 2*wantScores[i] {
			t.Fatalf("document %d: %v, want score %v", i, d, wantScores[i])
		}
		if len(d) != 4 {
			t.Fatalf("document %d has extra fields: %v", i, d)
		}
	}
}

// A sort by score and a field, spilled to disk, keeps scores and order.
func TestTextScoreSortSpills(t *testing.T) {
	old := sortMemoryBytes
	sortMemoryBytes = 1
	t.Cleanup(func() { sortMemoryBytes = old })
	out, err := runScored(t, &Env{AllowDiskUse: true, TempDir: t.TempDir()},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "sc", Value: textScore}, {Key: "_id", Value: int32(-1)}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: int32(1)}, {Key: "score", Value: textScore}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []bson.D{
		{{Key: "_id", Value: int32(4)}, {Key: "score", Value: 3.0}},
		{{Key: "_id", Value: int32(2)}, {Key: "score", Value: 3.0}},
		{{Key: "_id", Value: int32(1)}, {Key: "score", Value: 1.5}},
		{{Key: "_id", Value: int32(3)}, {Key: "score", Value: 0.75}},
	}
	if len(out) != len(want) {
		t.Fatalf("got %v", out)
	}
	for i := range want {
		if !equalDocs(out[i], want[i]) {
			t.Fatalf("got %v, want %v", out, want)
		}
	}
}

func equalDocs(a, b bson.D) bool {
	ra, _ := bson.Marshal(a)
	rb, _ := bson.Marshal(b)
	return string(ra) == string(rb)
}

// $facet's sub-pipelines read and sort by the score.
func TestTextScoreInFacet(t *testing.T) {
	out, err := runScored(t, &Env{},
		bson.D{{Key: "$facet", Value: bson.D{
			{Key: "top", Value: bson.A{
				bson.D{{Key: "$sort", Value: bson.D{{Key: "s", Value: textScore}, {Key: "_id", Value: int32(1)}}}},
				bson.D{{Key: "$limit", Value: int32(2)}},
				bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: int32(1)}, {Key: "s", Value: textScore}}}},
			}},
			{Key: "sum", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "t", Value: bson.D{{Key: "$sum", Value: textScore}}}}}}}},
		}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{
		{Key: "top", Value: bson.A{
			bson.D{{Key: "_id", Value: int32(2)}, {Key: "s", Value: 3.0}},
			bson.D{{Key: "_id", Value: int32(4)}, {Key: "s", Value: 3.0}},
		}},
		{Key: "sum", Value: bson.A{bson.D{{Key: "_id", Value: nil}, {Key: "t", Value: 8.25}}}},
	}
	if len(out) != 1 || !equalDocs(out[0], want) {
		t.Fatalf("got %v, want %v", out, want)
	}
}

// $group reads the score of the documents it takes.
func TestTextScoreInGroup(t *testing.T) {
	out, err := runScored(t, &Env{},
		bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(2)}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
			{Key: "total", Value: bson.D{{Key: "$sum", Value: textScore}}},
			{Key: "top", Value: bson.D{{Key: "$max", Value: textScore}}}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || fieldOf(t, out[0], "total") != 6.75 || fieldOf(t, out[0], "top") != 3.0 {
		t.Fatalf("got %v", out)
	}
}

// $bucket and $sortByCount group by the score.
func TestTextScoreInBucketAndSortByCount(t *testing.T) {
	out, err := runScored(t, &Env{AllowDiskUse: true},
		bson.D{{Key: "$bucket", Value: bson.D{{Key: "groupBy", Value: textScore}, {Key: "boundaries", Value: bson.A{int32(0), int32(2), int32(4)}}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || fieldOf(t, out[0], "count") != int32(2) || fieldOf(t, out[1], "count") != int32(2) {
		t.Fatalf("got %v", out)
	}
	out, err = runScored(t, &Env{}, bson.D{{Key: "$sortByCount", Value: textScore}})
	if err != nil {
		t.Fatal(err)
	}
	want := []bson.D{{{Key: "_id", Value: 3.0}, {Key: "count", Value: int32(2)}}}
	if len(out) != 3 || !equalDocs(out[0], want[0]) {
		t.Fatalf("got %v", out)
	}
}

func wantCode(t *testing.T, err error, code mongoerr.Code) {
	t.Helper()
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != code {
		t.Fatalf("got %v, want code %d", err, code)
	}
}

// Without $text the score is MongoDB's 40218; after a stage that does not
// carry it, and in a later $match, NotImplemented; other keywords are
// NotImplemented, unknown ones 17308.
func TestTextScoreRefusals(t *testing.T) {
	proj := bson.D{{Key: "$project", Value: bson.D{{Key: "s", Value: textScore}}}}
	sortByScore := bson.D{{Key: "$sort", Value: bson.D{{Key: "s", Value: textScore}}}}
	for _, st := range []bson.D{proj, sortByScore} {
		_, err := Build([]bson.D{st}, &Collect{}, &Env{})
		wantCode(t, err, mongoerr.Location40218)
	}
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$t"}}}}
	for _, st := range [][]bson.D{
		{group, proj},
		{group, sortByScore},
		{bson.D{{Key: "$count", Value: "n"}}, proj},
		{bson.D{{Key: "$bucketAuto", Value: bson.D{{Key: "groupBy", Value: textScore}, {Key: "buckets", Value: int32(2)}}}}},
		{bson.D{{Key: "$facet", Value: bson.D{{Key: "f", Value: bson.A{proj}}}}}, proj},
		{bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{textScore, int32(1)}}}}}}}},
		{bson.D{{Key: "$project", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "searchScore"}}}}}}},
		{bson.D{{Key: "$sort", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "indexKey"}}}}}}},
	} {
		_, err := Build(st, &Collect{}, &Env{TextScore: &expr.Meta{}})
		wantCode(t, err, mongoerr.NotImplemented)
	}
	_, err := Build([]bson.D{{{Key: "$addFields", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "bogus"}}}}}}}, &Collect{}, &Env{TextScore: &expr.Meta{}})
	wantCode(t, err, mongoerr.Location17308)
}
