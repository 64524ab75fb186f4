package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// lookupStage is $lookup: for each document, the documents of another
// collection of the same database that match it, as an array field. The
// equality form matches foreignField against localField's value (each
// element of an array, missing as null), reading the other collection
// through env.Read once per batch of documents; the pipeline form runs a
// pipeline over the other collection for each document, with let
// variables bound from it; both may be combined.
type lookupStage struct {
	next                     Stage
	env                      *Env
	from                     string
	localField, foreignField string
	local                    expr.Expr
	as                       []string
	letNames                 []string
	letExprs                 []expr.Expr
	pipeline                 []bson.D
	// documents is the argument of a $documents first in the pipeline,
	// which then reads it instead of a collection.
	documents    any
	hasDocuments bool
	ev           *evaluator
	batch        []pendingLookup // the equality form's gathered input
}

func newLookup(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40321, "the $lookup specification must be an Object")
	}
	if env.Read == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$lookup is not supported here by tierdb")
	}
	l := &lookupStage{next: next, env: env, ev: newEvaluator(env)}
	var as string
	hasPipeline, hasLet := false, false
	var let bson.D
	for _, e := range d {
		switch e.Key {
		case "from":
			s, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "$lookup 'from' as %s (another database) is not supported by tierdb", query.TypeName(e.Value))
			}
			l.from = s
		case "as", "localField", "foreignField":
			s, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.FailedToParse, "$lookup argument '%s: %s' must be a string, is type %s", e.Key, expr.FormatValue(e.Value), query.TypeName(e.Value))
			}
			switch e.Key {
			case "as":
				as = s
			case "localField":
				l.localField = s
			default:
				l.foreignField = s
			}
		case "let":
			v, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s", query.TypeName(e.Value))
			}
			let, hasLet = v, true
		case "pipeline":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array, is type %s", query.TypeName(e.Value))
			}
			stages, err := ParsePipeline(a)
			if err != nil {
				return nil, err
			}
			l.documents, stages, l.hasDocuments = LeadingDocuments(stages)
			l.pipeline, hasPipeline = stages, true
		default:
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "unknown argument to $lookup: %s", e.Key)
		}
	}
	switch {
	case as == "":
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	case l.from == "" && !l.hasDocuments:
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'from' field for a $lookup (or a pipeline starting with $documents)")
	case (l.localField == "") != (l.foreignField == ""):
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
	case l.localField == "" && !hasPipeline:
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	case hasLet && !hasPipeline:
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup with 'let' must also specify a 'pipeline'")
	}
	if strings.HasPrefix(as, "$") {
		return nil, mongoerr.Newf(mongoerr.Location16410, "FieldPath field names may not start with '$': %s", as)
	}
	l.as = strings.Split(as, ".")
	scope := env.scope()
	if l.localField != "" {
		x, err := expr.Parse("$"+l.localField, scope)
		if err != nil {
			return nil, err
		}
		l.local = x
	}
	for _, v := range let {
		x, err := expr.Parse(v.Value, scope)
		if err != nil {
			return nil, err
		}
		l.letNames = append(l.letNames, v.Key)
		l.letExprs = append(l.letExprs, x)
	}
	if hasPipeline {
		// Parse the pipeline once now, so that a bad one fails before
		// anything runs; it is parsed again per document with the let
		// values bound.
		if _, err := l.subPipeline(l.placeholderVars(), &docsSink{}); err != nil {
			return nil, err
		}
		if l.hasDocuments {
			if _, err := expr.Parse(l.documents, expr.NewScope(l.placeholderVars())); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// placeholderVars binds every variable the sub-pipeline may read to null.
func (l *lookupStage) placeholderVars() map[string]any {
	return placeholders(l.env.Vars, l.letNames)
}

// placeholders is vars with every name of names bound to null: what a
// sub-pipeline is compiled against before its per-document values exist.
func placeholders(vars map[string]any, names []string) map[string]any {
	out := make(map[string]any, len(vars)+len(names))
	for k, v := range vars {
		out[k] = v
	}
	for _, n := range names {
		out[n] = nil
	}
	return out
}

func (l *lookupStage) subPipeline(vars map[string]any, sink Stage) (Stage, error) {
	sub := *l.env
	sub.Vars = vars
	sub.inFacet = false
	sub.within = "$lookup"
	return Build(l.pipeline, sink, &sub)
}

// lookupBatch is how many documents the equality form gathers before it
// reads the other collection once for all of them.
const lookupBatch = 256

type pendingLookup struct {
	doc  bson.D
	vals bson.A
}

// localValues is what localField's value matches in foreignField: each
// element of an array (an empty array matching as null), missing as null.
func (l *lookupStage) localValues(doc bson.D) (bson.A, error) {
	local, err := l.ev.eval(l.local, doc)
	if err != nil {
		return nil, err
	}
	switch x := local.(type) {
	case bson.A:
		if len(x) == 0 {
			return bson.A{nil}, nil
		}
		return x, nil
	default:
		if expr.IsMissing(x) {
			x = nil
		}
		return bson.A{x}, nil
	}
}

// equalityFilter matches field against any of vals, as a query does.
func equalityFilter(field string, vals bson.A) bson.D {
	if len(vals) == 1 {
		return bson.D{{Key: field, Value: bson.D{{Key: "$eq", Value: vals[0]}}}}
	}
	return bson.D{{Key: field, Value: bson.D{{Key: "$in", Value: vals}}}}
}

func (l *lookupStage) Push(doc bson.D) error {
	if l.pipeline == nil {
		vals, err := l.localValues(doc)
		if err != nil {
			return err
		}
		l.batch = append(l.batch, pendingLookup{doc: doc, vals: vals})
		if len(l.batch) >= lookupBatch {
			return l.flush()
		}
		return nil
	}
	var filter bson.D
	if l.localField != "" {
		vals, err := l.localValues(doc)
		if err != nil {
			return err
		}
		filter = equalityFilter(l.foreignField, vals)
	}
	vars := map[string]any{}
	for k, v := range l.env.Vars {
		vars[k] = v
	}
	for i, n := range l.letNames {
		v, err := l.ev.eval(l.letExprs[i], doc)
		if err != nil {
			return err
		}
		if expr.IsMissing(v) {
			v = nil
		}
		vars[n] = v
	}
	sink := &docsSink{what: "$lookup"}
	head, err := l.subPipeline(vars, sink)
	if err != nil {
		return err
	}
	f, err := query.ParseFilterVars(filter, vars)
	if err != nil {
		return err
	}
	if l.hasDocuments {
		err = l.readDocuments(vars, f, head.Push)
	} else {
		err = l.env.Read(l.env.Ctx, l.from, f, head.Push)
	}
	if err != nil && err != ErrDone {
		return err
	}
	if err := head.Finish(); err != nil {
		return err
	}
	arr := make(bson.A, len(sink.docs))
	for i, d := range sink.docs {
		arr[i] = d
	}
	return l.emit(doc, arr, sink.mem)
}

// readDocuments is the pipeline's leading $documents, evaluated with
// the let variables, as what it reads: those of them f matches.
func (l *lookupStage) readDocuments(vars map[string]any, f *query.Filter, fn func(bson.D) error) error {
	sub := *l.env
	sub.Vars = vars
	docs, err := EvalDocuments(l.documents, &sub)
	if err != nil {
		return err
	}
	for _, d := range docs {
		ok, err := f.MatchErr(d)
		if err != nil {
			return err
		}
		if ok {
			if err := fn(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush reads the other collection once for the gathered documents of
// the equality form, then gives each its matches, in input order.
func (l *lookupStage) flush() error {
	batch := l.batch
	l.batch = nil
	var union bson.A
	seen := map[string]bool{}
	filters := make([]*query.Filter, len(batch))
	for i, p := range batch {
		for _, v := range p.vals {
			if k := string(query.AppendKey(nil, v)); !seen[k] {
				seen[k] = true
				union = append(union, v)
			}
		}
		f, err := query.ParseFilter(equalityFilter(l.foreignField, p.vals))
		if err != nil {
			return err
		}
		filters[i] = f
	}
	f, err := query.ParseFilter(equalityFilter(l.foreignField, union))
	if err != nil {
		return err
	}
	matches := make([]bson.A, len(batch))
	mems := make([]int, len(batch))
	held := 0
	err = l.env.Read(l.env.Ctx, l.from, f, func(d bson.D) error {
		m := DocMemory(d)
		held += m
		for i := range batch {
			if filters[i].Match(d) {
				matches[i] = append(matches[i], d)
				mems[i] += m
				held += 16
			}
		}
		if held > MaxMemoryBytes {
			return Exceeded("$lookup")
		}
		return nil
	})
	if err != nil && err != ErrDone {
		return err
	}
	for i, p := range batch {
		if matches[i] == nil {
			matches[i] = bson.A{}
		}
		if err := l.emit(p.doc, matches[i], mems[i]); err != nil {
			return err
		}
		matches[i] = nil
	}
	return nil
}

// emit passes doc on with its matches at 'as', refusing an output
// document past the BSON size limit (mem estimates the matches' size).
func (l *lookupStage) emit(doc bson.D, matches bson.A, mem int) error {
	return emitWithArray(l.next, "$lookup", doc, l.as, matches, mem)
}

// emitWithArray passes doc on with arr at path as, refusing an output
// document past the BSON size limit (mem estimates arr's size, so only a
// large one is measured).
func emitWithArray(next Stage, stage string, doc bson.D, as []string, arr bson.A, mem int) error {
	out := setPath(doc, as, arr)
	if mem > maxDocBytes {
		raw, err := bsonx.Marshal(out)
		if err != nil {
			return err
		}
		if len(raw) > maxDocBytes {
			return mongoerr.Newf(mongoerr.BSONObjectTooLarge, "%s's output document is %d bytes, over the %d-byte limit", stage, len(raw), maxDocBytes)
		}
	}
	return next.Push(out)
}

func (l *lookupStage) Finish() error {
	if len(l.batch) > 0 {
		if err := l.flush(); err != nil && err != ErrDone {
			return err
		}
	}
	return l.next.Finish()
}

// unionWithStage is $unionWith: its input passes through, then the
// documents of another collection (through its own pipeline, if given).
type unionWithStage struct {
	next     Stage
	env      *Env
	coll     string
	pipeline []bson.D
	// documents: the pipeline starts with $documents, read instead of
	// a collection.
	documents    any
	hasDocuments bool
}

func newUnionWith(arg any, next Stage, env *Env) (Stage, error) {
	if env.Read == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$unionWith is not supported here by tierdb")
	}
	u := &unionWithStage{next: next, env: env}
	switch x := arg.(type) {
	case string:
		u.coll = x
	case bson.D:
		for _, e := range x {
			switch e.Key {
			case "coll":
				s, ok := e.Value.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", query.TypeName(e.Value))
				}
				u.coll = s
			case "pipeline":
				a, ok := e.Value.(bson.A)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", query.TypeName(e.Value))
				}
				stages, err := ParsePipeline(a)
				if err != nil {
					return nil, err
				}
				u.documents, u.pipeline, u.hasDocuments = LeadingDocuments(stages)
			default:
				return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$unionWith.%s' is an unknown field.", e.Key)
			}
		}
	default:
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", query.TypeName(arg))
	}
	if u.coll == "" && !u.hasDocuments {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$unionWith needs a 'coll', or a 'pipeline' that starts with $documents")
	}
	if u.hasDocuments {
		if _, err := expr.Parse(u.documents, env.scope()); err != nil {
			return nil, err
		}
	}
	// Parse the pipeline now, so that a bad one fails before anything runs.
	if _, err := Build(u.pipeline, &docsSink{}, u.subEnv()); err != nil {
		return nil, err
	}
	return u, nil
}

func (u *unionWithStage) subEnv() *Env {
	sub := *u.env
	sub.inFacet = false
	sub.within = "$unionWith"
	return &sub
}

func (u *unionWithStage) Push(doc bson.D) error { return u.next.Push(doc) }

// Finish streams the other collection's documents through its pipeline
// into the next stage, then finishes it.
func (u *unionWithStage) Finish() error {
	tail := &passThrough{next: u.next}
	head, err := Build(u.pipeline, tail, u.subEnv())
	if err != nil {
		return err
	}
	if u.hasDocuments {
		docs, err := EvalDocuments(u.documents, u.env)
		if err != nil {
			return err
		}
		err = RunDocuments(docs, head)
		if err != nil {
			return err
		}
		return u.next.Finish()
	}
	all, _ := query.ParseFilter(nil)
	err = u.env.Read(u.env.Ctx, u.coll, all, head.Push)
	if err != nil && err != ErrDone {
		return err
	}
	if err := head.Finish(); err != nil {
		return err
	}
	return u.next.Finish()
}

// passThrough hands documents on without finishing the next stage, which
// the stage owning it finishes itself.
type passThrough struct{ next Stage }

func (p *passThrough) Push(doc bson.D) error { return p.next.Push(doc) }
func (p *passThrough) Finish() error         { return nil }
