package commands

import (
	"context"
	"errors"
	"slices"
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
		return h.firstBatch(ctx, req.on, req, req.DB+"."+name, &sliceSource{docs: sink.Raws}, batchSize, false)
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
	defer out.abort()
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
	rs     *readSpec
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
		rs:  &readSpec{filter: filter, empty: len(rest) == 0 && text == nil, exact: text == nil && isIDEquality(first)},
		env: &exec.Env{Ctx: ctx, Vars: vars, Now: now, Read: h.reader(req, on), DB: req.DB, Output: noOutput{}, AllowDiskUse: allowDisk},
	}
	p.rs.sort, p.limitHint = leadingSort(stages)
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
		params, winning := p.rs.scanParams(col), bson.D{{Key: "stage", Value: "POSTGRESQL"}}
		if plan, ok := leadingSortPlan(col, p); ok {
			src := newOrderedSource(h.store, col, p.rs, plan, nil)
			src.limitHint = p.limitHint
			params, rest = src.walkParams(), p.stages[1:]
			winning = append(winning, bson.E{Key: "inputStage", Value: sortStage(plan)})
		}
		plan, err := h.store.Explain(ctx, on, col, params)
		if err != nil {
			return nil, err
		}
		winning = slices.Insert(winning, 1, bson.E{Key: "plan", Value: plan})
		planner = append(planner, bson.E{Key: "winningPlan", Value: winning})
	}
	stages := bson.A{bson.D{{Key: "$cursor", Value: bson.D{{Key: "queryPlanner", Value: planner}}}}}
	for _, st := range rest {
		stages = append(stages, st)
	}
	return bson.D{{Key: "explainVersion", Value: "1"}, {Key: "stages", Value: stages}}, nil
}

// leadingSort is the sort of a $sort first in stages (zero when there is
// none or it does not parse: building the stage reports that) and how
// many documents the $skip and $limit right after it let through.
func leadingSort(stages []bson.D) (query.Sort, int64) {
	if len(stages) == 0 || stages[0][0].Key != "$sort" {
		return query.Sort{}, 0
	}
	d, ok := stages[0][0].Value.(bson.D)
	if !ok {
		return query.Sort{}, 0
	}
	s, err := query.ParseSort(d)
	if err != nil {
		return query.Sort{}, 0
	}
	var hint int64
	for _, st := range stages[1:] {
		n, ok := query.AsInt(st[0].Value)
		if !ok || n < 0 || (st[0].Key != "$skip" && st[0].Key != "$limit") {
			break
		}
		hint += n
		if st[0].Key == "$limit" {
			return s, hint
		}
	}
	return s, 0
}

// leadingSortPlan is the index that serves the pipeline's leading $sort,
// if one does.
func leadingSortPlan(col *storage.Collection, p *parsedAggregate) (sortPlan, bool) {
	if p.rs.sort.IsEmpty() {
		return sortPlan{}, false
	}
	if _, byID := p.rs.sort.ByIDOnly(); byID {
		return sortPlan{}, false
	}
	return planIndexSort(col.Indexes, p.rs.sort, p.rs.filter.PinnedPaths())
}

// aggregateInput is what feeds the pipeline: the stages to run and the
// read that pushes documents into them. A leading $sort that an index
// serves is dropped from the stages: the read walks the index instead.
func (h *Handlers) aggregateInput(ctx context.Context, on storage.On, db string, p *parsedAggregate) ([]bson.D, func(func(bson.D) error) error) {
	if p.text != nil {
		// $text reads through its own search, neither walked nor counted.
		return p.stages, func(push func(bson.D) error) error {
			return h.readText(ctx, on, db, p.coll, p.text, p.rs, push)
		}
	}
	plain := func(push func(bson.D) error) error {
		rs := *p.rs
		rs.sort = query.Sort{}
		return h.readInto(ctx, on, db, p.coll, &rs, push)
	}
	col, err := h.store.Collection(ctx, on, db, p.coll)
	if err != nil {
		return p.stages, plain
	}
	if countsOnly(p.stages) {
		// The stages count their input and look at nothing in it: they
		// get as many empty documents as match, counted by PostgreSQL
		// when the $match is empty, else by a scan that decodes nothing
		// it can match on the BSON bytes.
		return p.stages, func(push func(bson.D) error) error {
			rs := *p.rs
			rs.sort = query.Sort{}
			n, err := h.countMatches(ctx, on, col, &rs)
			if err != nil {
				return err
			}
			for range n {
				if err := push(bson.D{}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	plan, ok := leadingSortPlan(col, p)
	if !ok {
		return p.stages, plain
	}
	src := newOrderedSource(h.store, col, p.rs, plan, on.Node)
	src.raw, src.keepDecoded, src.limitHint = true, true, p.limitHint
	notePlan(ctx, on, col, p.rs, src.walkParams(), false)
	return p.stages[1:], func(push func(bson.D) error) error {
		for {
			batch, done, err := src.next(ctx, on, 100)
			if err != nil {
				return err
			}
			for i := range batch {
				if err := push(src.decoded[i]); err != nil {
					return err
				}
			}
			if done {
				return nil
			}
		}
	}
}

// countsOnly reports whether a pipeline's first stages read nothing of
// their input documents but their number: $skip and $limit, then $count or
// a $group on a constant _id whose accumulators all $sum a constant number
// (what drivers send for countDocuments).
func countsOnly(stages []bson.D) bool {
	for _, st := range stages {
		switch st[0].Key {
		case "$skip", "$limit":
			continue
		case "$count":
			return true
		case "$group":
			g, ok := st[0].Value.(bson.D)
			if !ok || len(g) == 0 {
				return false
			}
			for _, e := range g {
				if e.Key == "_id" {
					if !constantID(e.Value) {
						return false
					}
					continue
				}
				acc, ok := e.Value.(bson.D)
				if !ok || len(acc) != 1 || acc[0].Key != "$sum" {
					return false
				}
				switch acc[0].Value.(type) {
				case int32, int64, float64:
				default:
					return false
				}
			}
			return true
		}
		return false
	}
	return false
}

// constantID is a $group _id that is the same for every document.
func constantID(v any) bool {
	switch x := v.(type) {
	case nil, int32, int64, float64, bool:
		return true
	case string:
		return !strings.HasPrefix(x, "$")
	}
	return false
}

// readInto streams the documents of db.coll that match rs to fn, until fn
// returns an error (exec.ErrDone stops early). A collection that does not
// exist has no documents.
func (h *Handlers) readInto(ctx context.Context, on storage.On, db, coll string, rs *readSpec, fn func(bson.D) error) error {
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
			return h.readInto(ctx, on, req.DB, coll, &readSpec{filter: filter}, fn)
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
		if err := h.readInto(ctx, on, req.DB, base, &readSpec{filter: all, empty: true}, head.Push); err != nil && err != exec.ErrDone {
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
