package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The gap-filling window functions of $setWindowFields, which $fill also
// uses: $locf (the last non-null value seen so far in the partition's
// order) and $linearFill (null and missing values between two numbers
// interpolated along the single sortBy field). Neither takes a window.

func (o *windowOutput) parseFill(arg any, hasWindow bool, sortKeys int, scope *expr.Scope) error {
	x, err := expr.Parse(arg, scope)
	if err != nil {
		return err
	}
	o.arg = x
	if hasWindow {
		return mongoerr.Newf(mongoerr.FailedToParse, "'window' field is not allowed in %s", o.op)
	}
	if o.op == "$linearFill" && sortKeys != 1 {
		return mongoerr.Newf(mongoerr.Code(605001), "%s must be specified with a top level sortBy expression with exactly one element", o.op)
	}
	return nil
}

// nullish is null, missing or undefined: what the fill functions fill.
func nullish(v any) bool {
	return v == nil || expr.IsMissing(v) || isUndefined(v)
}

// locf carries the last non-null value forward; before the first one,
// null.
func locf(vals []any) []any {
	out := make([]any, len(vals))
	var last any
	for i, v := range vals {
		if !nullish(v) {
			last = v
		}
		out[i] = last
	}
	return out
}

// linearFill fills each null between two numbers on the line through
// them, x being the sortBy field (numbers or dates, no value twice);
// nulls before the first or after the last number stay null.
func (w *windowStage) linearFill(rows []windowRow, vals []any) ([]any, error) {
	xs := make([]any, len(rows))
	for i, r := range rows {
		y := vals[i]
		if !nullish(y) && !expr.IsNumber(y) {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "Value to be filled must be numeric or nullish, but found %s", query.TypeName(y))
		}
		x, _ := nestedField(r.doc, w.sortPath)
		_, isDate := x.(bson.DateTime)
		if !expr.IsNumber(x) && !isDate {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "Value of the sortBy field must be numeric or a date, but found %s", query.TypeName(x))
		}
		if i > 0 {
			if query.Compare(x, xs[i-1]) == 0 {
				return nil, mongoerr.New(mongoerr.Code(6050106), "There can be no repeated values in the sort field")
			}
			if _, prevDate := xs[i-1].(bson.DateTime); prevDate != isDate {
				return nil, mongoerr.Newf(mongoerr.TypeMismatch, "Conflicting sort value types, previously received type %s, but found %s", query.TypeName(xs[i-1]), query.TypeName(x))
			}
		}
		xs[i] = x
	}
	out := make([]any, len(vals))
	prev := -1
	for i := 0; i < len(vals); i++ {
		if !nullish(vals[i]) {
			out[i], prev = vals[i], i
			continue
		}
		next := i + 1
		for next < len(vals) && nullish(vals[next]) {
			next++
		}
		if prev < 0 || next == len(vals) {
			for ; i < next; i++ {
				out[i] = nil
			}
			i--
			continue
		}
		for ; i < next; i++ {
			v, err := interpolate(xs[prev], vals[prev], xs[next], vals[next], xs[i])
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		i--
	}
	return out, nil
}

// interpolate is y1 + (x - x1) * ((y2 - y1) / (x2 - x1)), in MongoDB's
// arithmetic.
func interpolate(x1, y1, x2, y2, x any) (any, error) {
	dy, err := expr.Subtract(y2, y1)
	if err != nil {
		return nil, err
	}
	dx, err := expr.Subtract(x2, x1)
	if err != nil {
		return nil, err
	}
	slope, err := expr.Divide(dy, dx)
	if err != nil {
		return nil, err
	}
	off, err := expr.Subtract(x, x1)
	if err != nil {
		return nil, err
	}
	m, err := expr.Multiply(off, slope)
	if err != nil {
		return nil, err
	}
	return expr.Add(y1, m)
}
