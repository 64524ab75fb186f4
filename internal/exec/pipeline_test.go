package exec

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func stages(t *testing.T, s ...bson.D) []bson.D {
	t.Helper()
	return s
}

// A $match + $group over more documents than the memory limit could hold
// streams: it holds one state per group and gives the right counts.
func TestGroupStreamsOverManyDocuments(t *testing.T) {
	sink := &Collect{}
	head, err := Build(stages(t,
		bson.D{{Key: "$match", Value: bson.D{{Key: "keep", Value: true}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}}},
	), sink, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	const docs = 150_000 // 150 MB of padding: past the 100 MB limit if held
	for i := range docs {
		doc := bson.D{{Key: "k", Value: int32(i % 7)}, {Key: "keep", Value: i%3 != 0}, {Key: "pad", Value: pad}}
		if err := head.Push(doc); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
	}
	if g := head.(*mapStage).next.(*groupStage); g.mem > 10_000 {
		t.Fatalf("$group holds %d bytes for 7 groups", g.mem)
	}
	if err := head.Finish(); err != nil {
		t.Fatal(err)
	}
	var total int32
	for _, raw := range sink.Raws {
		v, _ := raw.LookupErr("n")
		n, ok := v.Int32OK()
		if !ok {
			t.Fatalf("n of %v", raw)
		}
		total += n
	}
	if len(sink.Raws) != 7 || total != docs-docs/3 {
		t.Fatalf("%d groups counting %d, want 7 counting %d", len(sink.Raws), total, docs-docs/3)
	}
}

// $sort holds its input and fails with MongoDB's code past the limit,
// counted as decoded documents; $limit stops the input early.
func TestSortLimitAndEarlyStop(t *testing.T) {
	head, err := Build(stages(t, bson.D{{Key: "$sort", Value: bson.D{{Key: "k", Value: 1}}}}), &Collect{}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 100_000)
	var failed error
	for i := 0; i < 2000 && failed == nil; i++ {
		failed = head.Push(bson.D{{Key: "k", Value: int32(i)}, {Key: "pad", Value: pad}})
	}
	if e, ok := mongoerr.As(failed); !ok || e.Code != mongoerr.QueryExceededMemoryLimit {
		t.Fatalf("sorting 200 MB: %v, want QueryExceededMemoryLimit", failed)
	}
	sink := &Collect{}
	head, _ = Build(stages(t, bson.D{{Key: "$limit", Value: int32(3)}}), sink, &Env{})
	pushed := 0
	for i := range 10 {
		pushed++
		if err := head.Push(bson.D{{Key: "i", Value: int32(i)}}); err == ErrDone {
			break
		}
	}
	if err := head.Finish(); err != nil {
		t.Fatal(err)
	}
	if pushed != 3 || len(sink.Raws) != 3 {
		t.Fatalf("pushed %d, got %d; want $limit 3 to stop the input after 3", pushed, len(sink.Raws))
	}
}
