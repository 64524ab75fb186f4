package commands

import (
	"context"
	"math"
	"sort"
	"strings"

	"tierdb/internal/bsonx"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// aggregate runs the small pipeline subset drivers need for counting and
// simple reports. A leading $match is pushed down to storage; the rest runs
// in memory over the matched documents.
func (h *Handlers) aggregate(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "aggregate is supported on collections only")
	}
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, err
	}
	if _, ok := lookup(req.Cmd, "cursor"); !ok {
		if explain, _ := getBool(req.Cmd, "explain", false); !explain {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
		}
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	stages := make([]bson.D, len(pipeline))
	for i, s := range pipeline {
		d, ok := s.(bson.D)
		if !ok || len(d) != 1 {
			return nil, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
		}
		stages[i] = d
	}
	var first bson.D
	if len(stages) > 0 && stages[0][0].Key == "$match" {
		if first, err = stageDoc(stages[0]); err != nil {
			return nil, err
		}
		stages = stages[1:]
	}
	rs, err := parseReadSpec(first, nil, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	var docs []bson.D
	ctx, done, err := h.routeRead(ctx, req)
	if err != nil {
		return nil, err
	}
	defer done()
	col, err := h.store.Collection(ctx, req.DB, name)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
	case err != nil:
		return nil, err
	default:
		total := 0
		err = h.eachMatch(ctx, col, rs, func(doc bson.D, raw bson.Raw) (bool, error) {
			total += len(raw)
			if total > maxSortBytes {
				return true, mongoerr.New(mongoerr.QueryExceededMemoryLimit, "aggregation exceeded memory limit of 104857600 bytes")
			}
			docs = append(docs, doc)
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, st := range stages {
		if docs, err = runStage(st, docs); err != nil {
			return nil, err
		}
	}
	raws := make([]bson.Raw, len(docs))
	for i, d := range docs {
		if raws[i], err = bsonx.Marshal(d); err != nil {
			return nil, err
		}
	}
	return h.firstBatch(ctx, req, req.DB+"."+name, &sliceSource{docs: raws}, batchSize, false)
}

func stageDoc(st bson.D) (bson.D, error) {
	d, ok := st[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "the %s stage specification must be an object", st[0].Key)
	}
	return d, nil
}

func runStage(st bson.D, docs []bson.D) ([]bson.D, error) {
	name, arg := st[0].Key, st[0].Value
	switch name {
	case "$match":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		f, err := query.ParseFilter(d)
		if err != nil {
			return nil, err
		}
		out := docs[:0]
		for _, doc := range docs {
			if f.Match(doc) {
				out = append(out, doc)
			}
		}
		return out, nil
	case "$sort":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		s, err := query.ParseSort(d)
		if err != nil {
			return nil, err
		}
		sort.SliceStable(docs, func(i, j int) bool { return s.Compare(docs[i], docs[j]) < 0 })
		return docs, nil
	case "$skip", "$limit":
		n, ok := asInt(arg)
		if !ok || n < 0 || (name == "$limit" && n == 0) {
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "invalid argument to %s stage: must be a positive number", name)
		}
		if name == "$skip" {
			return docs[min(int(n), len(docs)):], nil
		}
		return docs[:min(int(n), len(docs))], nil
	case "$project":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		p, err := update.ParseProjection(d)
		if err != nil {
			return nil, err
		}
		for i := range docs {
			docs[i] = p.Apply(docs[i])
		}
		return docs, nil
	case "$count":
		field, ok := arg.(string)
		if !ok || field == "" || strings.HasPrefix(field, "$") || strings.Contains(field, ".") {
			return nil, mongoerr.New(mongoerr.FailedToParse, "the $count field must be a non-empty string without '$' or '.'")
		}
		if len(docs) == 0 {
			return nil, nil
		}
		return []bson.D{{{Key: field, Value: countValue(int64(len(docs)))}}}, nil
	case "$group":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		return group(d, docs)
	}
	return nil, mongoerr.Newf(mongoerr.NotImplemented, "pipeline stage %s is not supported by tierdb", name)
}

// group implements $group with _id expressions and the common accumulators.
func group(spec bson.D, docs []bson.D) ([]bson.D, error) {
	idExpr, ok := lookup(spec, "_id")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	type acc struct {
		op   string
		expr any
	}
	var fields []string
	var accs []acc
	for _, e := range spec {
		if e.Key == "_id" {
			continue
		}
		d, ok := e.Value.(bson.D)
		if !ok || len(d) != 1 {
			return nil, mongoerr.Newf(mongoerr.Location40234, "The field '%s' must be an accumulator object", e.Key)
		}
		switch d[0].Key {
		case "$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count":
		default:
			return nil, mongoerr.Newf(mongoerr.Location15952, "unknown group operator '%s'", d[0].Key)
		}
		fields = append(fields, e.Key)
		accs = append(accs, acc{d[0].Key, d[0].Value})
	}
	type state struct {
		id     any
		sums   []sum
		vals   []any
		arrays []bson.A
		counts []int64
	}
	var order []string
	groups := map[string]*state{}
	for _, doc := range docs {
		id, err := evalExpr(doc, idExpr)
		if err != nil {
			return nil, err
		}
		k := string(query.AppendKey(nil, id))
		g := groups[k]
		if g == nil {
			g = &state{id: id, sums: make([]sum, len(accs)), vals: make([]any, len(accs)), arrays: make([]bson.A, len(accs)), counts: make([]int64, len(accs))}
			groups[k] = g
			order = append(order, k)
		}
		for i, a := range accs {
			if a.op == "$count" {
				g.sums[i].add(int32(1))
				continue
			}
			v, err := evalExpr(doc, a.expr)
			if err != nil {
				return nil, err
			}
			switch a.op {
			case "$sum", "$avg":
				if isNumber(v) {
					g.sums[i].add(v)
					g.counts[i]++
				}
			case "$min", "$max":
				if v == nil {
					continue
				}
				c := query.Compare(v, g.vals[i])
				if g.counts[i] == 0 || (a.op == "$min" && c < 0) || (a.op == "$max" && c > 0) {
					g.vals[i] = v
				}
				g.counts[i]++
			case "$first":
				if g.counts[i] == 0 {
					g.vals[i] = v
				}
				g.counts[i]++
			case "$last":
				g.vals[i] = v
			case "$push":
				g.arrays[i] = append(g.arrays[i], v)
			case "$addToSet":
				dup := false
				for _, x := range g.arrays[i] {
					if query.Compare(x, v) == 0 {
						dup = true
						break
					}
				}
				if !dup {
					g.arrays[i] = append(g.arrays[i], v)
				}
			}
		}
	}
	out := make([]bson.D, 0, len(order))
	for _, k := range order {
		g := groups[k]
		d := bson.D{{Key: "_id", Value: g.id}}
		for i, a := range accs {
			var v any
			switch a.op {
			case "$sum", "$count":
				v = g.sums[i].value()
			case "$avg":
				if g.counts[i] > 0 {
					v = g.sums[i].mean(g.counts[i])
				}
			case "$push", "$addToSet":
				if g.arrays[i] == nil {
					g.arrays[i] = bson.A{}
				}
				v = g.arrays[i]
			default:
				v = g.vals[i]
			}
			d = append(d, bson.E{Key: fields[i], Value: v})
		}
		out = append(out, d)
	}
	return out, nil
}

// evalExpr evaluates the expressions $group needs: "$path", literals, and
// documents of expressions.
func evalExpr(doc bson.D, expr any) (any, error) {
	switch e := expr.(type) {
	case string:
		if strings.HasPrefix(e, "$") {
			if strings.HasPrefix(e, "$$") {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "variables (%s) are not supported by tierdb", e)
			}
			v, _ := query.Lookup(doc, e[1:])
			return v, nil
		}
		return e, nil
	case bson.D:
		if len(e) > 0 && strings.HasPrefix(e[0].Key, "$") {
			if e[0].Key == "$literal" {
				return e[0].Value, nil
			}
			return nil, mongoerr.Newf(mongoerr.InvalidPipelineOperator, "expression operator %s is not supported by tierdb", e[0].Key)
		}
		out := make(bson.D, 0, len(e))
		for _, f := range e {
			v, err := evalExpr(doc, f.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: f.Key, Value: v})
		}
		return out, nil
	}
	return expr, nil
}

func isNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128:
		return true
	}
	return false
}

// sum adds numbers keeping MongoDB's result type: int32 while it fits, then
// int64, double as soon as a double is added, and exact decimal as soon as
// a Decimal128 is.
type sum struct {
	i       int64
	f       float64
	isFloat bool
	isLong  bool
	dec     *update.DecimalSum // non-nil once a decimal was added
}

func (s *sum) add(v any) {
	if d, isDec := v.(bson.Decimal128); isDec && s.dec == nil {
		// From now on everything adds up as decimal, what came before
		// included.
		s.dec = &update.DecimalSum{}
		s.dec.Add(s.i)
		if s.isFloat {
			s.dec.Add(s.f)
		}
		s.dec.Add(d)
		return
	}
	if s.dec != nil {
		s.dec.Add(v)
		return
	}
	switch n := v.(type) {
	case int32:
		s.addInt(int64(n))
	case int64:
		s.isLong = true
		s.addInt(n)
	case float64:
		s.isFloat = true
		s.f += n
	}
}

func (s *sum) addInt(n int64) {
	if (n > 0 && s.i > math.MaxInt64-n) || (n < 0 && s.i < math.MinInt64-n) {
		s.isFloat = true
		s.f += float64(s.i) + float64(n)
		s.i = 0
		return
	}
	s.i += n
}

func (s *sum) float() float64 { return s.f + float64(s.i) }

// mean is $avg's result over n numbers: double, or decimal once a decimal
// was added.
func (s *sum) mean(n int64) any {
	if s.dec != nil {
		return s.dec.Mean(n)
	}
	return s.float() / float64(n)
}

func (s *sum) value() any {
	switch {
	case s.dec != nil:
		return s.dec.Value()
	case s.isFloat:
		return s.float()
	case s.isLong || s.i > math.MaxInt32 || s.i < math.MinInt32:
		return s.i
	}
	return int32(s.i)
}
