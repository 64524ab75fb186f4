package commands

import (
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// aggregate runs a pipeline (package exec) over a collection. A leading
// $match is pushed down to storage as a prefilter; the rest runs in
// process, documents streaming through the stages.
func (h *Handlers) aggregate(ctx context.Context, req *Request) (bson.D, error) {
	if isChangeStream(req.Cmd) {
		return h.changeStream(ctx, req) // changestream.go
	}
	if reply, handled, err := h.aggregateSource(ctx, req); handled {
		return reply, err // $collStats, $currentOp (sources.go)
	}
	explain, err := getBool(req.Cmd, "explain", false)
	if err != nil {
		return nil, err
	}
	if explain {
		return h.explainAggregate(ctx, req)
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, err
	}
	if _, ok := lookup(req.Cmd, "cursor"); !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	name, err := aggregateCollection(req)
	if err != nil {
		return nil, err
	}
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	run := func(ctx context.Context, req *Request) (bson.D, error) {
		sink := &exec.Collect{}
		if err := h.runAggregate(ctx, req, name, pipeline, sink); err != nil {
			return nil, err
		}
		return h.firstBatch(ctx, req.on, req, req.DB+"."+name, &exec.SliceSource{Docs: sink.Raws}, batchSize, false)
	}
	if writes(pipeline) {
		// $out and $merge honour the command's write concern.
		return h.withWriteConcern(ctx, req, run)
	}
	return run(ctx, req)
}

// writes reports whether a pipeline ends in $out or $merge.
func writes(pipeline bson.A) bool {
	if len(pipeline) == 0 {
		return false
	}
	last, ok := pipeline[len(pipeline)-1].(bson.D)
	return ok && len(last) == 1 && (last[0].Key == "$out" || last[0].Key == "$merge")
}

// runAggregate runs pipeline over db.name (a collection, or a view: its
// pipeline first, over the collection it reads) into sink. Documents
// stream through the stages one at a time: memory is what the stages
// keep ($group's groups, $sort's input) and the results, not every match.
func (h *Handlers) runAggregate(ctx context.Context, req *Request, name string, pipeline bson.A, sink exec.Stage) error {
	out := h.newOutput(ctx, req)
	defer out.Abort(ctx)
	on, done, err := h.routeRead(req)
	if err != nil {
		return err
	}
	defer done()
	p, err := h.parseAggregate(ctx, on, req, name, pipeline)
	if err != nil {
		return err
	}
	p.env.Output = out
	stages, read := h.aggregateInput(ctx, on, req.DB, p)
	head, err := exec.Build(stages, sink, p.env)
	if err != nil {
		return err
	}
	err = read(head.Push)
	if err == nil || err == exec.ErrDone {
		err = head.Finish()
	}
	return h.memoryError(req, err)
}

// memoryError tells a stage past its memory limit apart when the command
// allowed disk use (as MongoDB 6.0 does by default): tierdb spills only
// $sort and $group, so for the other blocking stages the limit stands, but the
// answer must not claim the permission was missing.
func (h *Handlers) memoryError(req *Request, err error) error {
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.QueryExceededMemoryLimit {
		return err
	}
	if allow, _ := getBool(req.Cmd, "allowDiskUse", true); !allow {
		return err
	}
	return mongoerr.Newf(mongoerr.ExceededMemoryLimit, "%s; disk use is allowed, but tierdb spills only $sort and $group to disk, not this stage", strings.TrimSuffix(me.Msg, exec.ExceededHint))
}

// findDiskUse keeps find's memory error honest: its in-memory sort does
// not spill, so with allowDiskUse: true it answers ExceededMemoryLimit,
// not that disk use was not allowed.
func findDiskUse(next handlerFunc) handlerFunc {
	return func(ctx context.Context, req *Request) (bson.D, error) {
		reply, err := next(ctx, req)
		var me *mongoerr.Error
		if err == nil || !errors.As(err, &me) || me.Code != mongoerr.QueryExceededMemoryLimit {
			return reply, err
		}
		if allow, _ := getBool(req.Cmd, "allowDiskUse", false); !allow {
			return reply, err
		}
		return nil, mongoerr.Newf(mongoerr.ExceededMemoryLimit, "%s; allowDiskUse was given, but find's in-memory sort does not spill", me.Msg)
	}
}

// parsedAggregate is an aggregate command ready to run: the collection it
// reads, the prefilter of its leading $match and the stages after it,
// already checked.
type parsedAggregate struct {
	coll   string
	first  bson.D
	rs     *exec.ReadSpec
	stages []bson.D
	env    *exec.Env
	// limitHint is how many documents a $sort first in stages passes on
	// at most (the $skip and $limit after it), 0 when unbounded.
	limitHint int64
	// text is the leading $match's $text, if any (text.go).
	text *textQuery
}

// parseAggregate prepares pipeline over db.name; over a view, the view's
// pipeline comes first and the collection it reads is read.
func (h *Handlers) parseAggregate(ctx context.Context, on storage.On, req *Request, name string, pipeline bson.A) (*parsedAggregate, error) {
	base, viewStages, err := h.resolveView(ctx, on, req.DB, name)
	if err != nil {
		return nil, err
	}
	stages, err := exec.ParsePipeline(append(viewStages, pipeline...))
	if err != nil {
		return nil, err
	}
	now := expr.Now() // one $$NOW for the whole command
	vars, err := letVarsAt(req.Cmd, now)
	if err != nil {
		return nil, err
	}
	first, stages, err := exec.LeadingMatch(stages)
	if err != nil {
		return nil, err
	}
	rest, text, err := splitText(first)
	if err != nil {
		return nil, err
	}
	filter, err := query.ParseFilterVars(rest, expr.WithNow(vars, now))
	if err != nil {
		return nil, err
	}
	allowDisk, err := getBool(req.Cmd, "allowDiskUse", true)
	if err != nil {
		return nil, err
	}
	p := &parsedAggregate{
		coll: base, first: first, stages: stages, text: text,
		// With $text, rs is only the rest of the $match: never "empty" or
		// "exact", so no shortcut can take it for the whole selection.
		rs:  &exec.ReadSpec{Filter: filter, Empty: len(rest) == 0 && text == nil, Exact: text == nil && exec.IsIDEquality(first)},
		env: &exec.Env{Ctx: ctx, Vars: vars, Now: now, Read: h.reader(req, on), DB: req.DB, Output: noOutput{}, AllowDiskUse: allowDisk},
	}
	if text != nil {
		p.env.TextScore = &expr.Meta{} // readText sets each document's score
	}
	p.rs.Sort, p.limitHint = exec.LeadingSort(stages)
	// Build the stages once before reading anything, so that a bad stage
	// fails at once.
	if _, err := exec.Build(stages, &exec.Collect{}, p.env); err != nil {
		return nil, err
	}
	return p, nil
}

// noOutput stands for the real output while a pipeline is only parsed
// (or explained): it never writes.
type noOutput struct{}

func (noOutput) Out(context.Context, string, string) (exec.OutWriter, error) {
	return nil, mongoerr.New(mongoerr.InternalError, "a pipeline that was only parsed wrote")
}

func (noOutput) Merge(context.Context, string, string, []string) (exec.MergeTarget, error) {
	return nil, mongoerr.New(mongoerr.InternalError, "a pipeline that was only parsed wrote")
}

// explainAggregate describes how a pipeline runs, reading nothing: the
// leading $match as PostgreSQL's plan of the prefilter it becomes (as
// explain does for find), then the stages tierdb runs in process, as
// given.
func (h *Handlers) explainAggregate(ctx context.Context, req *Request) (bson.D, error) {
	name, err := aggregateCollection(req)
	if err != nil {
		return nil, err
	}
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	on := req.on
	p, err := h.parseAggregate(ctx, on, req, name, pipeline)
	if err != nil {
		return nil, err
	}
	if p.text != nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "explain of a $text query is not supported by tierdb")
	}
	planner := bson.D{{Key: "namespace", Value: req.DB + "." + p.coll}, {Key: "parsedQuery", Value: p.first}}
	rest := p.stages // the stages tierdb runs in process
	col, err := h.store.Collection(ctx, on, req.DB, p.coll)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
		planner = append(planner, bson.E{Key: "winningPlan", Value: bson.D{{Key: "stage", Value: "EOF"}}})
	case err != nil:
		return nil, err
	default:
		winning, walked, err := h.read(ctx, on, col, p.rs).ExplainPipeline(ctx, p.limitHint)
		if err != nil {
			return nil, err
		}
		if walked {
			rest = p.stages[1:]
		}
		planner = append(planner, bson.E{Key: "winningPlan", Value: winning})
	}
	stages := bson.A{bson.D{{Key: "$cursor", Value: bson.D{{Key: "queryPlanner", Value: planner}}}}}
	for _, st := range rest {
		stages = append(stages, st)
	}
	return bson.D{{Key: "explainVersion", Value: "1"}, {Key: "stages", Value: stages}}, nil
}

// aggregateInput is what feeds the pipeline: the stages to run and the
// read that pushes documents into them (exec.Read.Feed). $text reads
// through its own search.
func (h *Handlers) aggregateInput(ctx context.Context, on storage.On, db string, p *parsedAggregate) ([]bson.D, func(func(bson.D) error) error) {
	if p.text != nil {
		// $text reads through its own search, neither walked nor counted.
		return p.stages, func(push func(bson.D) error) error {
			return h.readText(ctx, on, db, p.coll, p.text, p.rs, p.env.TextScore, push)
		}
	}
	col, err := h.store.Collection(ctx, on, db, p.coll)
	if err != nil {
		// A collection that does not exist has no documents; another
		// error is the read's.
		return p.stages, func(push func(bson.D) error) error {
			rs := *p.rs
			rs.Sort = query.Sort{}
			return h.readInto(ctx, on, db, p.coll, &rs, push)
		}
	}
	stages, feed := h.read(ctx, on, col, p.rs).Feed(p.stages, p.limitHint)
	return stages, func(push func(bson.D) error) error { return feed(ctx, push) }
}

// readInto streams the documents of db.coll that match rs to fn, until fn
// returns an error (exec.ErrDone stops early). A collection that does not
// exist has no documents.
func (h *Handlers) readInto(ctx context.Context, on storage.On, db, coll string, rs *exec.ReadSpec, fn func(bson.D) error) error {
	col, err := h.store.Collection(ctx, on, db, coll)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
		return nil
	case err != nil:
		return err
	}
	return h.eachMatch(ctx, on, col, rs, func(doc bson.D, _ bson.Raw) (bool, error) {
		if err := fn(doc); err != nil {
			return err == exec.ErrDone, err
		}
		return false, nil
	})
}

// reader is how a pipeline's $lookup and $unionWith read the other
// collections (or views) of the request's database: the same storage read as the
// pipeline's own input, where on says (the same node), allowed when the user may find
// in that collection too (the dispatch wrapper checked only the
// aggregated one).
func (h *Handlers) reader(req *Request, on storage.On) exec.Reader {
	return func(ctx context.Context, coll string, filter *query.Filter, fn func(bson.D) error) error {
		if h.opts.Auth != nil && req.Session != nil && req.Session.User != nil &&
			!req.Session.User.Grants.Allows(req.DB, coll, auth.Actions(auth.ActFind)) {
			return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to execute command { find: %q }", req.DB, coll)
		}
		base, stages, err := h.resolveView(ctx, on, req.DB, coll)
		if err != nil || len(stages) == 0 {
			if err != nil {
				return err
			}
			return h.readInto(ctx, on, req.DB, coll, &exec.ReadSpec{Filter: filter}, fn)
		}
		// A view: its pipeline over the collection it reads, then filter.
		parsed, err := exec.ParsePipeline(stages)
		if err != nil {
			return err
		}
		sink := &funcSink{push: func(doc bson.D) error {
			if ok, err := filter.MatchErr(doc); !ok || err != nil {
				return err
			}
			return fn(doc)
		}}
		head, err := exec.Build(parsed, sink, &exec.Env{Ctx: ctx, Read: h.reader(req, on), DB: req.DB})
		if err != nil {
			return err
		}
		all, _ := query.ParseFilter(nil)
		if err := h.readInto(ctx, on, req.DB, base, &exec.ReadSpec{Filter: all, Empty: true}, head.Push); err != nil && err != exec.ErrDone {
			return err
		}
		return head.Finish()
	}
}

// letVarsAt evaluates the command's let: constants and expressions over
// no document, with $$NOW at now, which the pipeline's expressions read
// as $$name.
func letVarsAt(cmd bson.D, now bson.DateTime) (map[string]any, error) {
	let, err := getDoc(cmd, "let")
	if err != nil || let == nil {
		return nil, err
	}
	vars := map[string]any{}
	scope := expr.NewScope(nil)
	for _, e := range let {
		x, err := expr.Parse(e.Value, scope)
		if err != nil {
			return nil, err
		}
		v, err := x.Eval(expr.NewCtx(bson.D{}, nil, now))
		if err != nil {
			return nil, err
		}
		vars[e.Key] = v
	}
	return vars, nil
}
