package commands

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// A find over a view becomes stages after the view's pipeline, in the
// order find applies them.
func TestFindStages(t *testing.T) {
	cmd := bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "projection", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}},
		{Key: "skip", Value: int32(2)}, {Key: "limit", Value: int32(-3)}}
	stages, single, err := findStages(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stages {
		names = append(names, s.(bson.D)[0].Key)
	}
	if got := stages[3].(bson.D)[0].Value; !single || len(names) != 5 || names[0] != "$match" || names[1] != "$sort" ||
		names[2] != "$skip" || names[3] != "$limit" || names[4] != "$project" || got != int64(3) {
		t.Fatalf("stages %v (limit %v), single batch %v", names, got, single)
	}
	if stages, _, err := findStages(bson.D{{Key: "find", Value: "v"}}); err != nil || len(stages) != 0 {
		t.Fatalf("a plain find: %v %v", stages, err)
	}
	if _, _, err := findStages(bson.D{{Key: "find", Value: "v"}, {Key: "skip", Value: int32(-1)}}); err == nil {
		t.Fatal("a negative skip was accepted")
	}
}

func TestWrites(t *testing.T) {
	for _, c := range []struct {
		pipeline bson.A
		want     bool
	}{
		{bson.A{}, false},
		{bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}, false},
		{bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$out", Value: "x"}}}, true},
		{bson.A{bson.D{{Key: "$merge", Value: "x"}}}, true},
	} {
		if writes(c.pipeline) != c.want {
			t.Errorf("%v: want %v", c.pipeline, c.want)
		}
	}
}

// find's sort past the memory limit answers 146 when allowDiskUse: true
// was given (it cannot spill), 292 otherwise.
func TestFindDiskUse(t *testing.T) {
	failing := func(context.Context, *Request) (bson.D, error) {
		return nil, mongoerr.New(mongoerr.QueryExceededMemoryLimit, "Sort exceeded memory limit")
	}
	for _, c := range []struct {
		cmd  bson.D
		want mongoerr.Code
	}{
		{bson.D{{Key: "find", Value: "c"}}, mongoerr.QueryExceededMemoryLimit},
		{bson.D{{Key: "find", Value: "c"}, {Key: "allowDiskUse", Value: false}}, mongoerr.QueryExceededMemoryLimit},
		{bson.D{{Key: "find", Value: "c"}, {Key: "allowDiskUse", Value: true}}, mongoerr.ExceededMemoryLimit},
	} {
		_, err := findDiskUse(failing)(context.Background(), &Request{Cmd: c.cmd})
		if e, ok := mongoerr.As(err); !ok || e.Code != c.want {
			t.Errorf("%v: %v, want %d", c.cmd, err, c.want)
		}
	}
}
