package commands

import (
	"context"
	"math"
	"strings"

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
	// Build the rest of the pipeline before reading anything, so that a
	// bad stage fails at once.
	sink := &collectSink{}
	head, err := buildPipeline(stages, sink)
	if err != nil {
		return nil, err
	}
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
		// Documents stream through the stages one at a time: memory is
		// what the stages keep ($group's groups, $sort's input) and the
		// results, not every match.
		err = h.eachMatch(ctx, col, rs, func(doc bson.D, _ bson.Raw) (bool, error) {
			err := head.push(doc)
			if err == errPipelineDone {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := head.finish(); err != nil {
		return nil, err
	}
	return h.firstBatch(ctx, req, req.DB+"."+name, &sliceSource{docs: sink.raws}, batchSize, false)
}

func stageDoc(st bson.D) (bson.D, error) {
	d, ok := st[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "the %s stage specification must be an object", st[0].Key)
	}
	return d, nil
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
