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
// a find, count or distinct, or the read feeding a pipeline, also runs and
// reports what it returned, how long it took and what PostgreSQL examined.
// Without a verbosity tierdb shows the plan only (MongoDB would run the
// query too).

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

// explainExecution runs a find, count or distinct (cmd; key: distinct's)
// explained with executionStats as it would run, every PostgreSQL
// statement of it analyzed (exec.Read.Analyzed), and describes the run
// (exec.ExecStats.Report). A distinct's nReturned is the documents it read
// the key of.
func (h *Handlers) explainExecution(ctx context.Context, on storage.On, col *storage.Collection, rs *exec.ReadSpec, cmd, key string) (bson.D, error) {
	r, st := h.read(ctx, on, col, rs).Analyzed(h.store)
	start := time.Now()
	run := r.Drain
	switch cmd {
	case "count":
		run = r.Count
	case "distinct":
		run = func(ctx context.Context) (n int64, err error) {
			vals := exec.NewDistinct(key)
			err = r.Each(ctx, func(doc bson.D, _ bson.Raw) (bool, error) {
				n++
				return false, vals.Push(doc)
			})
			return n, err
		}
	}
	n, err := run(ctx)
	if err != nil {
		return nil, err
	}
	return st.Report(n, cmd == "count", time.Since(start)), nil
}

// explainedDistinctKey is the key of an explained distinct (sub), "" for
// another command; a $text query is refused, as for find.
func explainedDistinctKey(sub *Request) (string, error) {
	if sub.Cmd[0].Key != "distinct" {
		return "", nil
	}
	key, filter, err := distinctArgs(sub)
	if err != nil {
		return "", err
	}
	if _, text, err := splitText(filter); err != nil || text != nil {
		if err == nil {
			err = mongoerr.New(mongoerr.NotImplemented, "explain of a $text query is not supported by tierdb")
		}
		return "", err
	}
	return key, nil
}

// addCursorStats puts, into an aggregate's explain (reply), the
// executionStats of its $cursor stage: the read that feeds the pipeline,
// run as it would run (exec.Read.DrainFeed), analyzed as a find's. The
// stages after it are not run.
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
	st := &exec.ExecStats{}
	start := time.Now()
	var n int64
	col, err := h.store.Collection(ctx, req.on, req.DB, p.coll)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
	case err != nil:
		return nil, err
	case p.rs != nil:
		var r *exec.Read
		r, st = h.read(ctx, req.on, col, p.rs).Analyzed(h.store)
		if n, err = r.DrainFeed(ctx, p.stages, p.limitHint); err != nil {
			return nil, err
		}
	}
	stats := st.Report(n, false, time.Since(start))
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
