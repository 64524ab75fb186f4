package exec

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/update"
)

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

func lookup(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// asInt reads a whole number of any numeric type.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) || math.IsNaN(n) || math.Abs(n) > 1<<63 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// countValue is an int32 when it fits, as MongoDB replies.
func countValue(n int64) any {
	if n <= 1<<31-1 {
		return int32(n)
	}
	return n
}
