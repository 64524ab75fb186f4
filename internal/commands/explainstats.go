package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
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
func (h *Handlers) explainExecution(ctx context.Context, on storage.On, col *storage.Collection, rs *exec.ReadSpec, count bool) (bson.D, error) {
	start := time.Now()
	n, err := h.read(ctx, on, col, rs).Count(ctx)
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

// addCursorStats puts, into an aggregate's explain (reply), the
// executionStats of its $cursor stage: the documents its leading $match
// read. The stages after it run in tierdb and report nothing more.
func (h *Handlers) addCursorStats(ctx context.Context, req *Request, reply bson.D) (bson.D, error) {
	name, err := aggregateCollection(req)
	if err != nil {
		return nil, err
	}
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	p, err := h.parseAggregate(ctx, req.on, req, name, pipeline)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var n int64
	col, err := h.store.Collection(ctx, req.on, req.DB, p.coll)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
	case err != nil:
		return nil, err
	case p.rs != nil:
		if n, err = h.read(ctx, req.on, col, p.rs).Count(ctx); err != nil {
			return nil, err
		}
	}
	stats := bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: n},
		{Key: "executionTimeMillis", Value: time.Since(start).Milliseconds()},
	}
	for i, e := range reply {
		stages, ok := e.Value.(bson.A)
		if e.Key != "stages" || !ok || len(stages) == 0 {
			continue
		}
		first, _ := stages[0].(bson.D)
		if len(first) != 1 || first[0].Key != "$cursor" {
			break
		}
		cursor, _ := first[0].Value.(bson.D)
		stages[0] = bson.D{{Key: "$cursor", Value: append(cursor, bson.E{Key: "executionStats", Value: stats})}}
		reply[i].Value = stages
	}
	return reply, nil
}
