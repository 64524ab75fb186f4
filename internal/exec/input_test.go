package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestCountsOnlyRecognisesCountingPipelines(t *testing.T) {
	group := func(id any, acc ...bson.E) bson.D {
		return bson.D{{Key: "$group", Value: append(bson.D{{Key: "_id", Value: id}}, acc...)}}
	}
	sum := func(v any) bson.D { return bson.D{{Key: "$sum", Value: v}} }
	cases := []struct {
		stages []bson.D
		want   bool
	}{
		{[]bson.D{group(int32(1), bson.E{Key: "n", Value: sum(int32(1))})}, true},
		{[]bson.D{{{Key: "$skip", Value: int32(3)}}, {{Key: "$limit", Value: int32(3)}}, group(nil, bson.E{Key: "n", Value: sum(2.5)})}, true},
		{[]bson.D{{{Key: "$count", Value: "n"}}, {{Key: "$project", Value: bson.D{{Key: "x", Value: "$n"}}}}}, true},
		{[]bson.D{group("k", bson.E{Key: "n", Value: sum(int64(1))})}, true},
		{[]bson.D{group("$b", bson.E{Key: "n", Value: sum(int32(1))})}, false},
		{[]bson.D{group(nil, bson.E{Key: "n", Value: sum("$b")})}, false},
		{[]bson.D{group(bson.D{{Key: "x", Value: "$b"}}, bson.E{Key: "n", Value: sum(int32(1))})}, false},
		{[]bson.D{group(nil, bson.E{Key: "n", Value: bson.D{{Key: "$max", Value: int32(1)}}})}, false},
		{[]bson.D{{{Key: "$project", Value: bson.D{{Key: "a", Value: 1}}}}, {{Key: "$count", Value: "n"}}}, false},
		{[]bson.D{{{Key: "$skip", Value: int32(1)}}}, false},
		{nil, false},
	}
	for i, c := range cases {
		if got := countsOnly(c.stages); got != c.want {
			t.Errorf("case %d %v: countsOnly %v, want %v", i, c.stages, got, c.want)
		}
	}
}
