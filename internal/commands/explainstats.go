package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// explain's verbosity. "queryPlanner" shows the plan only; with
// "executionStats" or "allPlansExecution" (there is one plan: PostgreSQL's)
// a find or count also runs and reports what it returned and how long it
// took. Without a verbosity tierdb shows the plan only (MongoDB would run
// the query too).

func explainVerbosity(cmd bson.D) (string, error) {
	v, ok := lookup(cmd, "verbosity")
	if !ok || v == nil {
		return "queryPlanner", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", typeErr("verbosity", "string", v)
	}
	switch s {
	case "queryPlanner", "executionStats", "allPlansExecution":
		return s, nil
	}
	return "", mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field 'explain.verbosity' is not a valid value.", s)
}

// explainExecution runs a find (count: false) or count explained with
// executionStats and describes the run.
func (h *Handlers) explainExecution(ctx context.Context, on storage.On, col *storage.Collection, rs *readSpec, count bool) (bson.D, error) {
	start := time.Now()
	n, err := h.countMatches(ctx, on, col, rs)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Milliseconds()
	stage := bson.D{{Key: "stage", Value: "POSTGRESQL"}, {Key: "nReturned", Value: n}}
	returned := n
	if count {
		stage = bson.D{{Key: "stage", Value: "COUNT"}, {Key: "nReturned", Value: int64(0)}, {Key: "nCounted", Value: n}}
		returned = 0
	}
	stage = append(stage, bson.E{Key: "executionTimeMillisEstimate", Value: elapsed})
	return bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: returned},
		{Key: "executionTimeMillis", Value: elapsed},
		{Key: "executionStages", Value: stage},
	}, nil
}
