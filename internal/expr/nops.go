package expr

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// The array forms of $firstN, $lastN, $minN and $maxN: {n, input}, n a
// positive integral number (5787902, 5787903, 5787908) evaluated first,
// input an array (5788200). $firstN and $lastN keep nulls; $minN and
// $maxN skip null, undefined and missing values, and keep, among equal
// values, the ones that came first. $group's accumulators of the same
// names share ValidateN, KeepN and MinMaxN.

func nOps() map[string]parser {
	return map[string]parser{
		"$firstN": nOp(mongoerr.Location5787801, func(a bson.A, n int) bson.A { return slices.Clone(a[:min(n, len(a))]) }),
		"$lastN":  nOp(mongoerr.Location5787801, func(a bson.A, n int) bson.A { return slices.Clone(a[len(a)-min(n, len(a)):]) }),
		"$minN":   nOp(mongoerr.Location5787900, func(a bson.A, n int) bson.A { return MinMaxN(a, n, false) }),
		"$maxN":   nOp(mongoerr.Location5787900, func(a bson.A, n int) bson.A { return MinMaxN(a, n, true) }),
	}
}

// ParseNArgs parses {n, input} (the array expressions' and $group's
// $firstN/$lastN/$minN/$maxN), notObject being the operator's code for
// an argument that is not a document.
func ParseNArgs(op string, arg any, s *Scope, notObject mongoerr.Code) (n, input Expr, err error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, nil, mongoerr.Newf(notObject, "specification must be an object; found %s: %s", op, FormatValue(arg))
	}
	for _, e := range d {
		var x Expr
		switch e.Key {
		case "n", "input":
			if x, err = Parse(e.Value, s); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, mongoerr.Newf(mongoerr.Location5787901, "Unknown argument for 'n' operator: %s", e.Key)
		}
		if e.Key == "n" {
			n = x
		} else {
			input = x
		}
	}
	if n == nil {
		return nil, nil, mongoerr.New(mongoerr.Location5787906, "Missing value for 'n'")
	}
	if input == nil {
		return nil, nil, mongoerr.New(mongoerr.Location5787907, "Missing value for 'input'")
	}
	return n, input, nil
}

func nOp(notObject mongoerr.Code, pick func(bson.A, int) bson.A) parser {
	return func(name string, arg any, s *Scope) (Expr, error) {
		n, input, err := ParseNArgs(name, arg, s, notObject)
		if err != nil {
			return nil, err
		}
		return &lazyExpr{args: []Expr{n, input}, fn: func(c *Ctx, a []Expr) (any, error) {
			nv, err := a[0].Eval(c)
			if err != nil {
				return nil, err
			}
			count, err := ValidateN(nv)
			if err != nil {
				return nil, err
			}
			v, err := a[1].Eval(c)
			if err != nil {
				return nil, err
			}
			arr, ok := v.(bson.A)
			if !ok {
				return nil, mongoerr.New(mongoerr.Location5788200, "Input must be an array")
			}
			return pick(arr, int(min(count, int64(len(arr))))), nil
		}}, nil
	}
}

// ValidateN checks an n: a number with an integral value, above 0.
func ValidateN(v any) (int64, error) {
	if !isNumber(v) {
		return 0, mongoerr.Newf(mongoerr.Location5787902, "Value for 'n' must be of integral type, but found %s", FormatValue(v))
	}
	n := toLong(v)
	if f := toFloat(v); float64(n) != f || math.IsNaN(f) {
		return 0, mongoerr.Newf(mongoerr.Location5787903, "Value for 'n' must be of integral type, but found %s", FormatValue(v))
	}
	if n <= 0 {
		return 0, mongoerr.Newf(mongoerr.Location5787908, "'n' must be greater than 0, found %d", n)
	}
	return n, nil
}

// KeepN returns the n values of vals that are null-free extremes: the
// largest (max) or smallest, equal values going to the earlier, in the
// order they came. Null, undefined and missing values are dropped.
func KeepN(vals bson.A, n int, max bool) bson.A {
	idx := make([]int, 0, len(vals))
	for i, v := range vals {
		if !nullish(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		if max {
			return Compare(vals[j], vals[i])
		}
		return Compare(vals[i], vals[j])
	})
	idx = idx[:min(n, len(idx))]
	slices.Sort(idx)
	out := make(bson.A, len(idx))
	for k, i := range idx {
		out[k] = vals[i]
	}
	return out
}

// MinMaxN is $minN's (ascending) or $maxN's (descending) answer: among
// equal values, $minN lists them in the order they came and $maxN in
// the reverse, as MongoDB's ordered multiset does.
func MinMaxN(vals bson.A, n int, max bool) bson.A {
	out := KeepN(vals, n, max)
	if max {
		slices.Reverse(out)
		slices.SortStableFunc(out, func(a, b any) int { return Compare(b, a) })
		return out
	}
	slices.SortStableFunc(out, Compare)
	return out
}
