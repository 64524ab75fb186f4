package exec

import (
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// unwindStage is $unwind: one document per element of an array field.
type unwindStage struct {
	next     Stage
	parts    []string
	index    string // includeArrayIndex, "" for none
	preserve bool   // preserveNullAndEmptyArrays
}

func newUnwind(arg any, next Stage) (Stage, error) {
	u := &unwindStage{next: next}
	var path string
	switch x := arg.(type) {
	case string:
		path = x
	case bson.D:
		hasPath := false
		for _, e := range x {
			switch e.Key {
			case "path":
				p, ok := e.Value.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location28808, "expected a string as the path for $unwind stage, got %s", query.TypeName(e.Value))
				}
				path, hasPath = p, true
			case "includeArrayIndex":
				s, ok := e.Value.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage, got %s", query.TypeName(e.Value))
				}
				if s == "" {
					return nil, mongoerr.New(mongoerr.Location28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage")
				}
				if strings.HasPrefix(s, "$") {
					return nil, mongoerr.Newf(mongoerr.Location28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", s)
				}
				u.index = s
			case "preserveNullAndEmptyArrays":
				b, ok := e.Value.(bool)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", query.TypeName(e.Value))
				}
				u.preserve = b
			default:
				return nil, mongoerr.Newf(mongoerr.Location28811, "unrecognized option to $unwind stage: %s", e.Key)
			}
		}
		if !hasPath {
			return nil, mongoerr.New(mongoerr.Location28812, "no path specified to $unwind stage")
		}
	default:
		return nil, mongoerr.Newf(mongoerr.Location15981, "expected either a string or an object as specification for $unwind stage, got %s", query.TypeName(arg))
	}
	if !strings.HasPrefix(path, "$") {
		return nil, mongoerr.Newf(mongoerr.Location28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	u.parts = strings.Split(path[1:], ".")
	for _, p := range u.parts {
		if p == "" || strings.HasPrefix(p, "$") {
			return nil, mongoerr.Newf(mongoerr.Location15998, "FieldPath field names may not be empty strings or start with '$': %s", path)
		}
	}
	return u, nil
}

// nestedField reads a path through documents only (not arrays), as
// $unwind does.
func nestedField(d bson.D, parts []string) (any, bool) {
	v, ok := lookup(d, parts[0])
	if !ok || len(parts) == 1 {
		return v, ok
	}
	sub, isDoc := v.(bson.D)
	if !isDoc {
		return nil, false
	}
	return nestedField(sub, parts[1:])
}

func (u *unwindStage) Push(doc bson.D) error {
	v, present := nestedField(doc, u.parts)
	arr, isArray := v.(bson.A)
	switch {
	case isArray && len(arr) > 0:
		for i, e := range arr {
			out := setPath(doc, u.parts, e)
			if u.index != "" {
				out = setPath(out, strings.Split(u.index, "."), int64(i))
			}
			if err := u.next.Push(out); err != nil {
				return err
			}
		}
		return nil
	case isArray || !present || v == nil || isUndefined(v):
		if !u.preserve {
			return nil
		}
		out := doc
		if isArray {
			out = setPath(doc, u.parts, expr.Missing)
		}
		if u.index != "" {
			out = setPath(out, strings.Split(u.index, "."), nil)
		}
		return u.next.Push(out)
	}
	// A value that is not an array unwinds as an array of itself.
	out := doc
	if u.index != "" {
		out = setPath(doc, strings.Split(u.index, "."), nil)
	}
	return u.next.Push(out)
}

func isUndefined(v any) bool {
	_, ok := v.(bson.Undefined)
	return ok
}

func (u *unwindStage) Finish() error { return u.next.Finish() }

// newSortByCount is $group by the expression counting documents, then a
// descending sort on the count.
func newSortByCount(arg any, next Stage, env *Env) (Stage, error) {
	const msg = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object"
	switch x := arg.(type) {
	case string:
		if !strings.HasPrefix(x, "$") {
			return nil, mongoerr.New(mongoerr.Location40148, msg)
		}
	case bson.D:
		if len(x) != 1 || !strings.HasPrefix(x[0].Key, "$") {
			return nil, mongoerr.New(mongoerr.Location40147, msg)
		}
	default:
		return nil, mongoerr.New(mongoerr.Location40149, "the sortByCount field must be specified as a string or as an object")
	}
	s, err := query.ParseSort(bson.D{{Key: "count", Value: int32(-1)}})
	if err != nil {
		return nil, err
	}
	return newGroupStage(bson.D{{Key: "_id", Value: arg}, {Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}},
		&sortStage{next: next, sort: s, spill: env.AllowDiskUse, tempDir: env.TempDir}, env)
}

// newBucket is $bucket: a $group whose key is the lower boundary of the
// bucket the groupBy value falls in (or the default), sorted by key.
func newBucket(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40201, "Argument to $bucket stage must be an object, but found type: %s.", query.TypeName(arg))
	}
	var groupBy, def any
	var bounds bson.A
	var output bson.D
	hasGroupBy, hasBounds, hasDefault, hasOutput := false, false, false, false
	for _, e := range d {
		switch e.Key {
		case "groupBy":
			groupBy, hasGroupBy = e.Value, true
			s, isStr := e.Value.(string)
			o, isDoc := e.Value.(bson.D)
			if !(isStr && strings.HasPrefix(s, "$")) && !(isDoc && len(o) == 1 && strings.HasPrefix(o[0].Key, "$")) {
				return nil, mongoerr.Newf(mongoerr.Location40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.", expr.FormatValue(e.Value))
			}
		case "boundaries":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40200, "The $bucket 'boundaries' field must be an array, but found type: %s.", query.TypeName(e.Value))
			}
			bounds, hasBounds = a, true
		case "default":
			def, hasDefault = e.Value, true
		case "output":
			o, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40196, "The $bucket 'output' field must be an object, but found type: %s.", query.TypeName(e.Value))
			}
			output, hasOutput = o, true
		default:
			return nil, mongoerr.Newf(mongoerr.Location40197, "Unrecognized option to $bucket: %s.", e.Key)
		}
	}
	if !hasGroupBy || !hasBounds {
		return nil, mongoerr.New(mongoerr.Location40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	if len(bounds) < 2 {
		return nil, mongoerr.Newf(mongoerr.Location40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(bounds))
	}
	for i, b := range bounds {
		if _, isDoc := b.(bson.D); isDoc {
			return nil, mongoerr.Newf(mongoerr.Location40191, "The $bucket 'boundaries' field must be an array of constant values, but found value: %s.", expr.FormatValue(b))
		}
		if i == 0 {
			continue
		}
		if query.TypeName(b) != query.TypeName(bounds[0]) && !(expr.IsNumber(b) && expr.IsNumber(bounds[0])) {
			return nil, mongoerr.Newf(mongoerr.Location40193, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", query.TypeName(bounds[0]), query.TypeName(b))
		}
		if query.Compare(bounds[i-1], b) >= 0 {
			return nil, mongoerr.Newf(mongoerr.Location40194, "The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, expr.FormatValue(bounds[i-1]), expr.FormatValue(b))
		}
	}
	if hasDefault && query.Compare(def, bounds[0]) >= 0 && query.Compare(def, bounds[len(bounds)-1]) < 0 {
		return nil, mongoerr.New(mongoerr.Location40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	if !hasOutput {
		output = bson.D{{Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}
	}
	scope := env.scope()
	key, err := expr.Parse(groupBy, scope)
	if err != nil {
		return nil, err
	}
	s, err := query.ParseSort(bson.D{{Key: "_id", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	// A spilled document would lose its text score (meta.go).
	spill := env.AllowDiskUse && (env.TextScore == nil || !hasMetaKey(d))
	g := &groupStage{next: &sortStage{next: next, sort: s, spill: env.AllowDiskUse, tempDir: env.TempDir}, groups: map[string]*groupState{},
		ev: newEvaluator(env), spill: spill, tempDir: env.TempDir}
	if err := g.parseAccumulators(output, scope); err != nil {
		return nil, err
	}
	g.id = func(doc bson.D) (any, error) {
		v, err := g.ev.eval(key, doc)
		if err != nil {
			return nil, err
		}
		if query.Compare(v, bounds[0]) >= 0 && query.Compare(v, bounds[len(bounds)-1]) < 0 &&
			(expr.IsNumber(v) == expr.IsNumber(bounds[0])) && (expr.IsNumber(v) || query.TypeName(v) == query.TypeName(bounds[0])) {
			for i := len(bounds) - 2; i >= 0; i-- {
				if query.Compare(v, bounds[i]) >= 0 {
					return bounds[i], nil
				}
			}
		}
		if !hasDefault {
			return nil, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
		}
		return def, nil
	}
	return g, nil
}

// facetStage is $facet: every document goes through each sub-pipeline;
// at Finish one document holds each sub-pipeline's results as an array.
type facetStage struct {
	next  Stage
	names []string
	heads []Stage
	sinks []*docsSink
	done  []bool
}

func newFacet(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok || len(d) == 0 {
		return nil, mongoerr.New(mongoerr.Location40169, "the $facet specification must be a non-empty object")
	}
	f := &facetStage{next: next}
	sub := *env
	sub.inFacet = true
	for _, e := range d {
		if e.Key == "" || strings.HasPrefix(e.Key, "$") || strings.Contains(e.Key, ".") {
			return nil, mongoerr.Newf(mongoerr.Location40169, "$facet output field names must not be empty, start with '$' or contain '.': %s", e.Key)
		}
		a, ok := e.Value.(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location40170, "arguments to $facet must be arrays, %s is type %s", e.Key, query.TypeName(e.Value))
		}
		if len(a) == 0 {
			return nil, mongoerr.Newf(mongoerr.Location40169, "sub-pipeline in $facet stage cannot be empty: %s", e.Key)
		}
		stages, err := ParsePipeline(a)
		if err != nil {
			return nil, err
		}
		sink := &docsSink{what: "$facet"}
		head, err := Build(stages, sink, &sub)
		if err != nil {
			return nil, err
		}
		f.names = append(f.names, e.Key)
		f.heads = append(f.heads, head)
		f.sinks = append(f.sinks, sink)
		f.done = append(f.done, false)
	}
	return f, nil
}

func (f *facetStage) Push(doc bson.D) error {
	total := 0
	for i, h := range f.heads {
		if !f.done[i] {
			if err := h.Push(doc); err == ErrDone {
				f.done[i] = true
			} else if err != nil {
				return err
			}
		}
		total += f.sinks[i].mem
	}
	// The sub-pipelines' results share one limit, as they make one
	// document.
	if total > MaxMemoryBytes {
		return Exceeded("$facet")
	}
	return nil
}

func (f *facetStage) Finish() error {
	out := bson.D{}
	for i, h := range f.heads {
		if err := h.Finish(); err != nil {
			return err
		}
		arr := make(bson.A, len(f.sinks[i].docs))
		for j, d := range f.sinks[i].docs {
			arr[j] = d
		}
		out = append(out, bson.E{Key: f.names[i], Value: arr})
	}
	raw, err := bsonx.Marshal(out)
	if err != nil {
		return err
	}
	if len(raw) > maxDocBytes {
		return mongoerr.Newf(mongoerr.BSONObjectTooLarge, "$facet's output document is %d bytes, over the %d-byte limit", len(raw), maxDocBytes)
	}
	if err := f.next.Push(out); err != nil && err != ErrDone {
		return err
	}
	return f.next.Finish()
}

// sampleStage is $sample: a uniform reservoir of size documents, emitted
// in random order. It holds at most size documents.
type sampleStage struct {
	next Stage
	size int64
	seen int64
	docs []bson.D
	mems []int
	mem  int
}

func newSample(arg any, next Stage) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location28745, "the $sample stage specification must be an object")
	}
	s := &sampleStage{next: next, size: -1}
	for _, e := range d {
		if e.Key != "size" {
			return nil, mongoerr.Newf(mongoerr.Location28748, "unrecognized option to $sample: %s", e.Key)
		}
		if !expr.IsNumber(e.Value) {
			return nil, mongoerr.New(mongoerr.Location28746, "size argument to $sample must be a number")
		}
		n, _ := query.AsInt(e.Value)
		if f, isFloat := e.Value.(float64); isFloat {
			n = int64(f)
		}
		if n < 0 {
			return nil, mongoerr.New(mongoerr.Location28747, "size argument to $sample must not be negative")
		}
		s.size = n
	}
	if s.size < 0 {
		return nil, mongoerr.New(mongoerr.Location28749, "$sample stage must specify a size")
	}
	return s, nil
}

func (s *sampleStage) Push(doc bson.D) error {
	s.seen++
	slot := int64(len(s.docs))
	if slot >= s.size {
		if slot = rand.Int64N(s.seen); slot >= s.size {
			return nil
		}
		s.mem -= s.mems[slot]
	}
	m := DocMemory(doc)
	if s.mem += m; s.mem > MaxMemoryBytes {
		return Exceeded("$sample")
	}
	if slot == int64(len(s.docs)) {
		s.docs = append(s.docs, doc)
		s.mems = append(s.mems, m)
	} else {
		s.docs[slot], s.mems[slot] = doc, m
	}
	return nil
}

func (s *sampleStage) Finish() error {
	rand.Shuffle(len(s.docs), func(i, j int) { s.docs[i], s.docs[j] = s.docs[j], s.docs[i] })
	s.mems = nil
	return flush(&s.docs, s.next)
}
