package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestUpdatePipeline(t *testing.T) {
	now := bson.DateTime(1700000000000)
	p, err := NewUpdatePipeline(bson.A{
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "total", Value: bson.D{{Key: "$add", Value: bson.A{"$a", "$b", "$$bonus"}}}},
			{Key: "at", Value: "$$NOW"},
		}}},
		bson.D{{Key: "$unset", Value: "b"}},
	}, map[string]any{"bonus": int32(10)}, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Transform(bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(2)}, {Key: "b", Value: int32(3)}})
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(2)}, {Key: "total", Value: int32(15)}, {Key: "at", Value: now}}
	gb, _ := bson.Marshal(got)
	wb, _ := bson.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUpdatePipelineRefusesOtherStages(t *testing.T) {
	for _, st := range []string{"$match", "$group", "$out", "$lookup", "$merge", "$graphLookup", "$setWindowFields"} {
		_, err := NewUpdatePipeline(bson.A{bson.D{{Key: st, Value: bson.D{}}}}, nil, 0)
		if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.InvalidOptions {
			t.Errorf("%s: %v, want InvalidOptions", st, err)
		}
	}
	_, err := NewUpdatePipeline(bson.A{bson.D{{Key: "$bogus", Value: 1}}}, nil, 0)
	if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.Location40324 {
		t.Errorf("unknown stage: %v", err)
	}
}
