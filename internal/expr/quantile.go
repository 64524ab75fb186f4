package expr

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $median ({input, method}) and $percentile ({input, p, method}), as
// expressions and as $group accumulators. method must be "approximate".
// tierdb answers every method with the exact discrete percentile: the
// value of rank ceil(n·p)−1 (at least 0; n−1 for p = 1) among the
// numeric inputs as doubles, which is what MongoDB's expression form
// computes for "approximate" and what its accumulator's t-digest
// estimates. Non-numeric inputs and NaNs are ignored; with none, $median
// is null and $percentile an array of nulls. The expression takes a
// number (every percentile is that number, NaN included) or an array of
// values.

// Quantile is a parsed $median or $percentile.
type Quantile struct {
	Input  Expr
	Ps     []float64
	Median bool
}

func quantileOps() map[string]parser {
	parse := func(name string, arg any, s *Scope) (Expr, error) {
		q, err := ParseQuantile(name, arg, s, false)
		if err != nil {
			return nil, err
		}
		return &opExpr{args: []Expr{q.Input}, fn: func(a []any) (any, error) {
			if isNumber(a[0]) {
				return q.format(func(float64) any { return toFloat(a[0]) }), nil
			}
			var vals []float64
			arr, _ := a[0].(bson.A)
			for _, v := range arr {
				if isNumber(v) {
					vals = append(vals, toFloat(v))
				}
			}
			return q.Result(vals), nil
		}}, nil
	}
	return map[string]parser{"$median": parse, "$percentile": parse}
}

// ParseQuantile parses $median's or $percentile's specification, as an
// accumulator or as an expression (their codes differ).
func ParseQuantile(op string, arg any, s *Scope, accumulator bool) (*Quantile, error) {
	median := op == "$median"
	d, ok := arg.(bson.D)
	if !ok {
		code := map[[2]bool]mongoerr.Code{
			{true, true}: mongoerr.Location7436100, {true, false}: mongoerr.Location7436201,
			{false, true}: mongoerr.Location7429703, {false, false}: mongoerr.Location7436200,
		}[[2]bool{median, accumulator}]
		return nil, mongoerr.Newf(code, "specification must be an object; found %s: %s", op, FormatValue(arg))
	}
	fields := map[string]any{}
	for _, e := range d {
		if e.Key != "input" && e.Key != "method" && (median || e.Key != "p") {
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", op, e.Key)
		}
		fields[e.Key] = e.Value
	}
	required := []string{"input", "p", "method"}
	if median {
		required = []string{"input", "method"}
	}
	for _, f := range required {
		if _, ok := fields[f]; !ok {
			return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", op, f)
		}
	}
	method, ok := fields["method"].(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.method' is the wrong type '%s', expected type 'string'", op, TypeName(fields["method"]))
	}
	if method != "approximate" {
		return nil, mongoerr.New(mongoerr.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
	}
	q := &Quantile{Median: median, Ps: []float64{0.5}}
	var err error
	if q.Input, err = Parse(fields["input"], s); err != nil {
		return nil, err
	}
	if !median {
		if q.Ps, err = parsePs(fields["p"], s); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// parsePs reads p: a constant, non-empty array of numbers in [0, 1].
func parsePs(arg any, s *Scope) ([]float64, error) {
	e, err := Parse(arg, s)
	if err != nil {
		return nil, err
	}
	v, ok := constantValue(e)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location7750300, "The $percentile 'p' field must be an array of constant values, but found value: %s.", FormatValue(arg))
	}
	const msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s"
	arr, ok := v.(bson.A)
	if !ok || len(arr) == 0 {
		return nil, mongoerr.Newf(mongoerr.Location7750301, msg, FormatValue(v))
	}
	ps := make([]float64, len(arr))
	for i, p := range arr {
		if !isNumber(p) {
			return nil, mongoerr.Newf(mongoerr.Location7750302, msg, FormatValue(p))
		}
		f := toFloat(p)
		if !(f >= 0 && f <= 1) {
			return nil, mongoerr.Newf(mongoerr.Location7750303, msg, numberString(f))
		}
		ps[i] = f
	}
	return ps, nil
}

// constantValue is a parsed expression's value when it has no free
// parts: a literal, or an array of them.
func constantValue(e Expr) (any, bool) {
	switch x := e.(type) {
	case constant:
		return x.v, true
	case arrayExpr:
		out := make(bson.A, len(x))
		for i, item := range x {
			v, ok := constantValue(item)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	}
	return nil, false
}

// Result is the answer for vals (which it may reorder): $median's double
// or null, $percentile's array of doubles or of nulls.
func (q *Quantile) Result(vals []float64) any {
	vals = slices.DeleteFunc(vals, math.IsNaN)
	slices.Sort(vals)
	return q.format(func(p float64) any {
		if len(vals) == 0 {
			return nil
		}
		rank := len(vals) - 1
		if p < 1 {
			rank = max(0, int(math.Ceil(float64(len(vals))*p))-1)
		}
		return vals[rank]
	})
}

// format is $median's value of 0.5 or $percentile's array of values of
// each p.
func (q *Quantile) format(value func(p float64) any) any {
	if q.Median {
		return value(0.5)
	}
	out := make(bson.A, len(q.Ps))
	for i, p := range q.Ps {
		out[i] = value(p)
	}
	return out
}

// Double is a number as a double (a decimal rounded to the nearest).
func Double(v any) float64 { return toFloat(v) }
