package expr

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Set expressions: arrays read as sets of distinct values (equal as
// $eq compares them: 1 and 1.0 are one value). $setUnion and
// $setIntersection answer their sets in BSON order, as MongoDB's ordered
// value sets do; $setDifference keeps the first array's order. A null or
// missing operand makes the result null, except for $setEquals,
// $setIsSubset, $anyElementTrue and $allElementsTrue, which need arrays.

func setOps() map[string]parser {
	return map[string]parser{
		"$setUnion":        nary(0, -1, setUnion),
		"$setIntersection": nary(0, -1, setIntersection),
		"$setDifference":   nary(2, 2, setDifference),
		"$setEquals":       setEqualsParser,
		"$setIsSubset":     nary(2, 2, setIsSubset),
		"$anyElementTrue":  nary(1, 1, elementsTrue("$anyElementTrue", mongoerr.Location17041, true)),
		"$allElementsTrue": nary(1, 1, elementsTrue("$allElementsTrue", mongoerr.Location17040, false)),
	}
}

// distinct returns arr's values without repeats, in BSON order.
func distinctSorted(arr bson.A) bson.A {
	out := slices.Clone(arr)
	slices.SortStableFunc(out, Compare)
	return slices.CompactFunc(out, func(a, b any) bool { return Compare(a, b) == 0 })
}

func contains(arr bson.A, v any) bool {
	return slices.ContainsFunc(arr, func(e any) bool { return Compare(e, v) == 0 })
}

func setOperand(name string, code mongoerr.Code, v any) (bson.A, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(code, "All operands of %s must be arrays. One argument is of type: %s", name, TypeName(v))
	}
	return arr, nil
}

func setUnion(args []any) (any, error) {
	all := bson.A{}
	for _, v := range args {
		if nullish(v) {
			return nil, nil
		}
		arr, err := setOperand("$setUnion", mongoerr.Location17043, v)
		if err != nil {
			return nil, err
		}
		all = append(all, arr...)
	}
	return distinctSorted(all), nil
}

func setIntersection(args []any) (any, error) {
	var acc bson.A
	for i, v := range args {
		if nullish(v) {
			return nil, nil
		}
		arr, err := setOperand("$setIntersection", mongoerr.Location17047, v)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			acc = distinctSorted(arr)
			continue
		}
		acc = slices.DeleteFunc(acc, func(e any) bool { return !contains(arr, e) })
	}
	if acc == nil {
		acc = bson.A{}
	}
	return acc, nil
}

func setDifference(args []any) (any, error) {
	if nullish(args[0]) || nullish(args[1]) {
		return nil, nil
	}
	a, ok := args[0].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17048, "both operands of $setDifference must be arrays. First argument is of type: %s", TypeName(args[0]))
	}
	b, ok := args[1].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17049, "both operands of $setDifference must be arrays. Second argument is of type: %s", TypeName(args[1]))
	}
	out := bson.A{}
	for _, e := range a {
		if !contains(b, e) && !contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func setEqualsParser(name string, arg any, s *Scope) (Expr, error) {
	if a, ok := arg.(bson.A); !ok || len(a) < 2 {
		n := 1
		if ok {
			n = len(a)
		}
		return nil, mongoerr.Newf(mongoerr.Location17045, "$setEquals needs at least two arguments had: %d", n)
	}
	return nary(2, -1, setEquals)(name, arg, s)
}

func setEquals(args []any) (any, error) {
	var first bson.A
	for i, v := range args {
		arr, err := setOperand("$setEquals", mongoerr.Location17044, v)
		if err != nil {
			return nil, err
		}
		set := distinctSorted(arr)
		if i == 0 {
			first = set
			continue
		}
		if !slices.EqualFunc(first, set, func(x, y any) bool { return Compare(x, y) == 0 }) {
			return false, nil
		}
	}
	return true, nil
}

func setIsSubset(args []any) (any, error) {
	a, ok := args[0].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17046, "both operands of $setIsSubset must be arrays. First argument is of type: %s", TypeName(args[0]))
	}
	b, ok := args[1].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17042, "both operands of $setIsSubset must be arrays. Second argument is of type: %s", TypeName(args[1]))
	}
	for _, e := range a {
		if !contains(b, e) {
			return false, nil
		}
	}
	return true, nil
}

// elementsTrue is $anyElementTrue (any) or $allElementsTrue over the
// truthiness of an array's elements.
func elementsTrue(name string, code mongoerr.Code, any_ bool) opFunc {
	return func(args []any) (any, error) {
		arr, ok := args[0].(bson.A)
		if !ok {
			return nil, mongoerr.Newf(code, "%s's argument must be an array, but is %s", name, TypeName(args[0]))
		}
		for _, e := range arr {
			if Truthy(e) == any_ {
				return any_, nil
			}
		}
		return !any_, nil
	}
}

// unsupportedOperators are MongoDB expression operators tierdb does not
// evaluate: refused with NotImplemented rather than as unknown (168).
// $function runs server-side JavaScript; $toHashedIndexKey needs
// MongoDB's hash of a value, which tierdb's hashed indexes do not compute;
// $toUUID, $createObjectId and $getNumberOfTrailingZeros are too new to
// have settled semantics here.
var unsupportedOperators = map[string]bool{
	"$function": true, "$toUUID": true, "$toHashedIndexKey": true,
	"$getNumberOfTrailingZeros": true, "$createObjectId": true,
}
