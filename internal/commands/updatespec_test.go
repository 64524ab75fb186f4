package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestUpdateEnvLetAndConstants(t *testing.T) {
	env, err := newUpdateEnv(bson.D{{Key: "update", Value: "c"}, {Key: "let", Value: bson.D{
		{Key: "x", Value: bson.D{{Key: "$add", Value: bson.A{int32(1), int32(2)}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if env.vars["x"] != int32(3) {
		t.Fatalf("let x = %v", env.vars["x"])
	}
	upd, err := env.parseUpdateArg(bson.A{bson.D{{Key: "$set", Value: bson.D{
		{Key: "sum", Value: bson.D{{Key: "$add", Value: bson.A{"$$x", "$$y"}}}},
	}}}}, nil, false, bson.D{{Key: "y", Value: int32(10)}}, "update.updates.arrayFilters")
	if err != nil {
		t.Fatal(err)
	}
	got, changed, err := upd.Apply(bson.D{{Key: "_id", Value: int32(1)}}, false)
	if err != nil || !changed {
		t.Fatalf("Apply: %v %v", got, err)
	}
	if len(got) != 2 || got[1].Value != int32(13) {
		t.Fatalf("got %v", got)
	}
}

func TestParseUpdateArgErrors(t *testing.T) {
	env := &updateEnv{}
	pipeline := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}}
	ops := bson.D{{Key: "$set", Value: bson.D{{Key: "a.$[i]", Value: int32(1)}}}}
	cases := []struct {
		name      string
		u         any
		filters   any
		constants bson.D
		code      mongoerr.Code
	}{
		{"filters with a pipeline", pipeline, bson.A{bson.D{{Key: "i", Value: int32(0)}}}, nil, mongoerr.FailedToParse},
		{"filters not an array", ops, bson.D{{Key: "i", Value: int32(0)}}, nil, mongoerr.TypeMismatch},
		{"filter not a document", ops, bson.A{"bad"}, nil, mongoerr.TypeMismatch},
		{"constants without a pipeline", bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}, nil,
			bson.D{{Key: "k", Value: int32(1)}}, mongoerr.Code(51198)},
		{"stage not allowed", bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "a", Value: int32(1)}}}}}, nil, nil, mongoerr.InvalidOptions},
	}
	for _, c := range cases {
		_, err := env.parseUpdateArg(c.u, c.filters, c.filters != nil, c.constants, "update.updates.arrayFilters")
		e, ok := mongoerr.As(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: %v, want code %d", c.name, err, c.code)
		}
	}
}
