package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A $sort allowed to use disk spills runs past its memory limit and
// merges them in order, equal keys in input order; without the
// permission it fails.
func TestSortSpillsToDisk(t *testing.T) {
	old := sortMemoryBytes
	sortMemoryBytes = 20_000
	defer func() { sortMemoryBytes = old }()
	var input []bson.D
	for i := range 5000 {
		input = append(input, bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32((i * 7919) % 100)}})
	}
	stage := parse(t, `{"$sort":{"k":-1}}`)
	env := &Env{AllowDiskUse: true, TempDir: t.TempDir()}
	sink := &docsSink{what: "test"}
	head, err := Build([]bson.D{stage}, sink, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range input {
		if err := head.Push(d); err != nil {
			t.Fatal(err)
		}
	}
	if runs := len(head.(*sortStage).runs); runs < 10 {
		t.Fatalf("%d runs spilled", runs)
	}
	if err := head.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(sink.docs) != len(input) {
		t.Fatalf("%d documents out of %d", len(sink.docs), len(input))
	}
	for i := 1; i < len(sink.docs); i++ {
		a, b := sink.docs[i-1], sink.docs[i]
		ka, kb := a[1].Value.(int32), b[1].Value.(int32)
		if ka < kb || (ka == kb && a[0].Value.(int32) > b[0].Value.(int32)) {
			t.Fatalf("out of order at %d: %v then %v", i, a, b)
		}
	}
	if _, err := run(t, &Env{}, input, stage); !hasCode(err, 292) {
		t.Fatalf("without disk use: %v", err)
	}
}

// A $group allowed to use disk that holds too many groups sends the
// documents of new groups to a file and groups them in later passes:
// every group comes out once, with all its documents, in input order.
func TestGroupSpillsNewGroups(t *testing.T) {
	old := groupMemoryBytes
	groupMemoryBytes = 30_000
	defer func() { groupMemoryBytes = old }()
	var input []bson.D
	for i := range 20_000 {
		input = append(input, bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32((i * 7919) % 1000)}})
	}
	stage := parse(t, `{"$group":{"_id":"$k","n":{"$sum":1},"first":{"$first":"$_id"},"last":{"$last":"$_id"},"lo":{"$min":"$_id"},"hi":{"$max":"$_id"}}}`)
	sink := &docsSink{what: "test"}
	head, err := Build([]bson.D{stage}, sink, &Env{AllowDiskUse: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range input {
		if err := head.Push(d); err != nil {
			t.Fatal(err)
		}
	}
	if head.(*groupStage).overflow == nil {
		t.Fatal("nothing spilled")
	}
	if err := head.Finish(); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	for _, d := range sink.docs {
		k := d[0].Value.(int32)
		// Input order within the group: first is the smallest _id, last
		// the largest.
		if seen[k] || d[1].Value != int32(20) || d[2].Value != d[4].Value || d[3].Value != d[5].Value {
			t.Fatalf("group %v", d)
		}
		seen[k] = true
	}
	if len(seen) != 1000 {
		t.Fatalf("%d groups", len(seen))
	}
	if _, err := run(t, &Env{}, input, stage); !hasCode(err, 292) {
		t.Fatalf("without disk use: %v", err)
	}
}
