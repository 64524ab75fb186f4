package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/bsonx"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// Views: a name for a pipeline over another collection or view of the same
// database, kept in storage's catalog. Reading a view (find, count,
// distinct, aggregate) runs its pipeline over what it reads, the read's
// own filter, sort, skip, limit and projection becoming stages after it;
// writing to one is refused (CommandNotSupportedOnView).

// maxViewDepth is how many views may stand on one another (MongoDB's 20).
const maxViewDepth = 20

type viewDef struct {
	viewOn   string
	pipeline bson.A
}

// viewOf returns the view db.name, or nil when db.name is a collection or
// nothing. A collection that exists costs no catalog read beyond the
// cached one.
func (h *Handlers) viewOf(ctx context.Context, on storage.On, db, name string) (*viewDef, error) {
	_, err := h.store.Collection(ctx, on, db, name)
	if err == nil || !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	v, err := h.store.View(ctx, on, db, name)
	if err != nil || v == nil {
		return nil, err
	}
	return decodeView(v)
}

func decodeView(v *storage.View) (*viewDef, error) {
	d, err := bsonx.Decode(v.Pipeline)
	if err != nil {
		return nil, err
	}
	p, _ := lookup(d, "pipeline")
	arr, _ := p.(bson.A)
	return &viewDef{viewOn: v.ViewOn, pipeline: arr}, nil
}

// resolveView follows views down to the collection they read: base is that
// collection, stages the views' pipelines in the order they run. A
// collection (or nothing) resolves to itself with no stages.
func (h *Handlers) resolveView(ctx context.Context, on storage.On, db, name string) (base string, stages bson.A, err error) {
	for depth := 0; ; depth++ {
		v, err := h.viewOf(ctx, on, db, name)
		if err != nil {
			return "", nil, err
		}
		if v == nil {
			return name, stages, nil
		}
		if depth == maxViewDepth {
			return "", nil, mongoerr.Newf(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", maxViewDepth)
		}
		stages = append(append(bson.A{}, v.pipeline...), stages...)
		name = v.viewOn
	}
}

// onViews routes a command on a view: reads to onView, anything else
// refused; commands on collections go to next unchanged.
func (h *Handlers) onViews(next handlerFunc, onView func(ctx context.Context, req *Request, v *viewDef) (bson.D, error)) handlerFunc {
	return func(ctx context.Context, req *Request) (bson.D, error) {
		name, err := collectionName(req)
		if err != nil {
			return next(ctx, req)
		}
		v, err := h.viewOf(ctx, req.on, req.DB, name)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return next(ctx, req)
		}
		if onView == nil {
			return nil, mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", req.DB, name)
		}
		return onView(ctx, req, v)
	}
}

// viewPipeline runs stages over the view the request names into sink.
func (h *Handlers) viewPipeline(ctx context.Context, req *Request, stages bson.A, sink exec.Stage) error {
	name, _ := collectionName(req)
	return h.runAggregate(ctx, req, name, stages, sink)
}

// findOnView is find over a view: filter, sort, skip, limit and projection
// as stages after the view's pipeline.
func (h *Handlers) findOnView(ctx context.Context, req *Request, _ *viewDef) (bson.D, error) {
	name, _ := collectionName(req)
	stages, singleBatch, err := findStages(req.Cmd)
	if err != nil {
		return nil, err
	}
	batchSize, err := getBatchSize(req.Cmd, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	sink := &exec.Collect{}
	if err := h.viewPipeline(ctx, req, stages, sink); err != nil {
		return nil, err
	}
	return h.firstBatch(ctx, req.on, req, req.DB+"."+name, &exec.SliceSource{Docs: sink.Raws}, batchSize, singleBatch)
}

// findStages are the stages a find's filter, sort, skip, limit and
// projection become over a view.
func findStages(cmd bson.D) (stages bson.A, singleBatch bool, err error) {
	stages = bson.A{}
	for _, f := range []struct{ field, stage string }{{"filter", "$match"}, {"sort", "$sort"}} {
		d, err := getDoc(cmd, f.field)
		if err != nil {
			return nil, false, err
		}
		if len(d) > 0 {
			stages = append(stages, bson.D{{Key: f.stage, Value: d}})
		}
	}
	skip, err := getInt(cmd, "skip", 0)
	if err != nil {
		return nil, false, err
	}
	if skip < 0 {
		return nil, false, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	limit, err := getInt(cmd, "limit", 0)
	if err != nil {
		return nil, false, err
	}
	if singleBatch, err = getBool(cmd, "singleBatch", false); err != nil {
		return nil, false, err
	}
	if limit < 0 {
		limit, singleBatch = -limit, true
	}
	if skip > 0 {
		stages = append(stages, bson.D{{Key: "$skip", Value: skip}})
	}
	if limit > 0 {
		stages = append(stages, bson.D{{Key: "$limit", Value: limit}})
	}
	proj, err := getDoc(cmd, "projection")
	if err != nil {
		return nil, false, err
	}
	if len(proj) > 0 {
		stages = append(stages, bson.D{{Key: "$project", Value: proj}})
	}
	return stages, singleBatch, nil
}

// explainOnViews answers explain of a find, count or distinct over a view
// as the explain of the aggregation it runs (distinct's as a $group of the
// key's values); anything else goes to next. The
// explained command's own maxTimeMS (drivers put it there) bounds the
// explain, whose executionStats run the command.
func (h *Handlers) explainOnViews(next handlerFunc) handlerFunc {
	return func(ctx context.Context, req *Request) (bson.D, error) {
		inner, err := getDoc(req.Cmd, "explain")
		if err == nil && len(inner) > 0 {
			var cancel context.CancelFunc
			if ctx, cancel, err = withMaxTime(ctx, inner); err != nil {
				return nil, err
			}
			defer cancel()
		}
		if err != nil || len(inner) == 0 || (inner[0].Key != "find" && inner[0].Key != "count" && inner[0].Key != "distinct") {
			return next(ctx, req)
		}
		sub := &Request{DB: req.DB, Cmd: inner, Session: req.Session, tier: req.tier, on: req.on}
		name, err := collectionName(sub)
		if err != nil {
			return next(ctx, req)
		}
		v, err := h.viewOf(ctx, req.on, req.DB, name)
		if err != nil || v == nil {
			if err != nil {
				return nil, err
			}
			return next(ctx, req)
		}
		var stages bson.A
		switch inner[0].Key {
		case "find":
			stages, _, err = findStages(inner)
		case "count":
			if stages, err = countStages(inner); err == nil {
				stages = append(stages, bson.D{{Key: "$count", Value: "n"}})
			}
		case "distinct":
			var key string
			var q bson.D
			if key, q, err = distinctArgs(sub); err == nil {
				stages = bson.A{bson.D{{Key: "$match", Value: q}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "values", Value: bson.D{{Key: "$addToSet", Value: "$" + key}}}}}}}
			}
		}
		if err != nil {
			return nil, err
		}
		verbosity, err := explainVerbosity(req.Cmd)
		if err != nil {
			return nil, err
		}
		agg := &Request{DB: req.DB, Cmd: bson.D{{Key: "aggregate", Value: name}, {Key: "pipeline", Value: stages}}, Session: req.Session, tier: req.tier, on: req.on}
		reply, err := h.explainAggregate(ctx, agg)
		if err != nil || verbosity == "queryPlanner" {
			return reply, err
		}
		return h.addCursorStats(ctx, agg, reply)
	}
}

// countOnView is count over a view.
func (h *Handlers) countOnView(ctx context.Context, req *Request, _ *viewDef) (bson.D, error) {
	stages, err := countStages(req.Cmd)
	if err != nil {
		return nil, err
	}
	c := &countSink{}
	if err := h.viewPipeline(ctx, req, stages, c); err != nil {
		return nil, err
	}
	return bson.D{{Key: "n", Value: countValue(c.n)}}, nil
}

// countStages is a count's query, skip and limit as pipeline stages.
func countStages(cmd bson.D) (bson.A, error) {
	q, err := getDoc(cmd, "query")
	if err != nil {
		return nil, err
	}
	skip, err := getInt(cmd, "skip", 0)
	if err != nil {
		return nil, err
	}
	limit, err := getInt(cmd, "limit", 0)
	if err != nil {
		return nil, err
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	if limit < 0 {
		limit = -limit
	}
	stages := bson.A{}
	if len(q) > 0 {
		stages = append(stages, bson.D{{Key: "$match", Value: q}})
	}
	if skip > 0 {
		stages = append(stages, bson.D{{Key: "$skip", Value: skip}})
	}
	if limit > 0 {
		stages = append(stages, bson.D{{Key: "$limit", Value: limit}})
	}
	return stages, nil
}

type countSink struct{ n int64 }

func (c *countSink) Push(bson.D) error { c.n++; return nil }
func (c *countSink) Finish() error     { return nil }

// distinctOnView is distinct over a view.
func (h *Handlers) distinctOnView(ctx context.Context, req *Request, _ *viewDef) (bson.D, error) {
	key, q, err := distinctArgs(req)
	if err != nil {
		return nil, err
	}
	stages := bson.A{}
	if len(q) > 0 {
		stages = append(stages, bson.D{{Key: "$match", Value: q}})
	}
	vals := exec.NewDistinct(key)
	if err := h.viewPipeline(ctx, req, stages, vals); err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: vals.Values()}}, nil
}

type funcSink struct{ push func(bson.D) error }

func (f *funcSink) Push(doc bson.D) error { return f.push(doc) }
func (f *funcSink) Finish() error         { return nil }

// createView is create with viewOn and pipeline.
func (h *Handlers) createView(ctx context.Context, req *Request, name string) (bson.D, error) {
	for _, e := range req.Cmd[1:] {
		switch {
		case e.Key == "viewOn" || e.Key == "pipeline" || e.Key == "collation" || isGenericField(e.Key):
		case neutral(e.Value):
		default:
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "option not supported on a view: %s", e.Key)
		}
	}
	viewOnV, _ := lookup(req.Cmd, "viewOn")
	viewOn, ok := viewOnV.(string)
	if !ok {
		return nil, typeErr("create.viewOn", "string", viewOnV)
	}
	if viewOn == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
	}
	pipeline := bson.A{}
	if v, ok := lookup(req.Cmd, "pipeline"); ok {
		if pipeline, ok = v.(bson.A); !ok {
			return nil, typeErr("create.pipeline", "array", v)
		}
	}
	if err := h.checkViewPipeline(ctx, req, pipeline); err != nil {
		return nil, err
	}
	if viewOn == name {
		return nil, mongoerr.Newf(mongoerr.GraphContainsCycle, "View cycle detected: %s.%s is defined on itself", req.DB, name)
	}
	if err := h.mayRead(req, viewOn); err != nil {
		return nil, err
	}
	if _, _, err := h.resolveView(ctx, req.on, req.DB, viewOn); err != nil {
		return nil, err
	}
	raw, err := bsonx.Marshal(bson.D{{Key: "pipeline", Value: pipeline}})
	if err != nil {
		return nil, err
	}
	return bson.D{}, h.store.CreateView(ctx, req.on, storage.View{DB: req.DB, Name: name, ViewOn: viewOn, Pipeline: raw})
}

// checkViewPipeline parses a view's pipeline, refusing the stages that
// write.
func (h *Handlers) checkViewPipeline(ctx context.Context, req *Request, pipeline bson.A) error {
	stages, err := exec.ParsePipeline(pipeline)
	if err != nil {
		return err
	}
	for i, st := range stages {
		if name := st[0].Key; name == "$out" || name == "$merge" {
			return mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "The aggregation stage %s in location %d of the pipeline cannot be used in the view definition because it writes to disk", name, i)
		}
	}
	env := &exec.Env{Ctx: ctx, Read: h.reader(req, req.on), DB: req.DB}
	_, err = exec.Build(stages, &exec.Collect{}, env)
	return err
}

// create makes a collection, or a view when viewOn is given.
func (h *Handlers) createCollectionOrView(ctx context.Context, req *Request) (bson.D, error) {
	_, hasViewOn := lookup(req.Cmd, "viewOn")
	if !hasViewOn {
		if _, hasPipeline := lookup(req.Cmd, "pipeline"); hasPipeline {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'pipeline' requires 'viewOn' to also be specified")
		}
		return h.create(ctx, req)
	}
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	if len(name) >= 7 && name[:7] == "system." {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid collection name: %s", name)
	}
	return h.createView(ctx, req, name)
}

// dropView drops a view named by drop.
func (h *Handlers) dropView(ctx context.Context, req *Request, _ *viewDef) (bson.D, error) {
	name, _ := collectionName(req)
	if _, err := h.store.DropView(ctx, req.on, req.DB, name); err != nil {
		return nil, err
	}
	return bson.D{{Key: "ns", Value: req.DB + "." + name}}, nil
}

// dropDatabaseAndViews is dropDatabase, views included.
func (h *Handlers) dropDatabaseAndViews(ctx context.Context, req *Request) (bson.D, error) {
	reply, err := h.dropDatabase(ctx, req)
	if err != nil {
		return nil, err
	}
	return reply, h.store.DropViews(ctx, req.on, req.DB)
}

// viewInfos are listCollections' entries for the views of db that match
// filter.
func (h *Handlers) viewInfos(ctx context.Context, on storage.On, db string, filter *query.Filter, nameOnly bool) (bson.A, error) {
	views, err := h.store.ListViews(ctx, on, db)
	if err != nil {
		return nil, err
	}
	out := bson.A{}
	for i := range views {
		def, err := decodeView(&views[i])
		if err != nil {
			return nil, err
		}
		info := bson.D{{Key: "name", Value: views[i].Name}, {Key: "type", Value: "view"}}
		if !nameOnly {
			info = append(info,
				bson.E{Key: "options", Value: bson.D{{Key: "viewOn", Value: def.viewOn}, {Key: "pipeline", Value: def.pipeline}}},
				bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: true}}})
		}
		if filter.Match(info) {
			out = append(out, info)
		}
	}
	return out, nil
}

// collModNotView refuses a view's options in a collMod of a collection.
func collModNotView(next handlerFunc) handlerFunc {
	return func(ctx context.Context, req *Request) (bson.D, error) {
		for _, k := range []string{"viewOn", "pipeline"} {
			if _, ok := lookup(req.Cmd, k); ok {
				return nil, mongoerr.Newf(mongoerr.InvalidOptions, "collMod: '%s' applies to views only", k)
			}
		}
		return next(ctx, req)
	}
}

// collModView is collMod on a view: a new viewOn and/or pipeline, checked
// as create checks them, and refused if the views would form a cycle.
func (h *Handlers) collModView(ctx context.Context, req *Request, v *viewDef) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	for _, e := range req.Cmd[1:] {
		switch {
		case e.Key == "viewOn" || e.Key == "pipeline" || isGenericField(e.Key):
		default:
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "option not supported on a view: %s", e.Key)
		}
	}
	if x, ok := lookup(req.Cmd, "viewOn"); ok {
		s, ok := x.(string)
		if !ok {
			return nil, typeErr("collMod.viewOn", "string", x)
		}
		if s == "" {
			return nil, mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
		}
		if err := h.mayRead(req, s); err != nil {
			return nil, err
		}
		v.viewOn = s
	}
	if x, ok := lookup(req.Cmd, "pipeline"); ok {
		a, ok := x.(bson.A)
		if !ok {
			return nil, typeErr("collMod.pipeline", "array", x)
		}
		if err := h.checkViewPipeline(ctx, req, a); err != nil {
			return nil, err
		}
		v.pipeline = a
	}
	raw, err := bsonx.Marshal(bson.D{{Key: "pipeline", Value: v.pipeline}})
	if err != nil {
		return nil, err
	}
	noCycle := func(view func(db, name string) (*storage.View, error)) error {
		on := v.viewOn
		for depth := 0; ; depth++ {
			if on == name {
				return mongoerr.Newf(mongoerr.GraphContainsCycle, "View cycle detected: %s.%s would read itself", req.DB, name)
			}
			if depth == maxViewDepth {
				return mongoerr.Newf(mongoerr.ViewDepthLimitExceeded, "View depth too deep; maximum depth is %d", maxViewDepth)
			}
			next, err := view(req.DB, on)
			if err != nil || next == nil {
				return err
			}
			on = next.ViewOn
		}
	}
	return bson.D{}, h.store.ModifyView(ctx, req.on, storage.View{DB: req.DB, Name: name, ViewOn: v.viewOn, Pipeline: raw}, noCycle)
}

// mayRead refuses a view on a collection the user may not read itself: a
// view must not let its creator read what it reads.
func (h *Handlers) mayRead(req *Request, coll string) error {
	s := req.Session
	if h.opts.Auth == nil || s == nil || s.User == nil || s.User.Grants.Allows(req.DB, coll, auth.Actions(auth.ActFind)) {
		return nil
	}
	return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to read %s, which the view would read", req.DB, coll)
}
