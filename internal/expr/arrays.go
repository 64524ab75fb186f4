package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// maxRangeElements bounds what $range may build (MongoDB bounds it by
// memory, 64 MiB by default).
const maxRangeElements = 4 << 20

func arrayOps() map[string]parser {
	return map[string]parser{
		"$size": nary(1, 1, func(a []any) (any, error) {
			arr, ok := a[0].(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location17124, "The argument to $size must be an array, but was of type: %s", TypeName(a[0]))
			}
			return intOrLong(int64(len(arr))), nil
		}),
		"$arrayElemAt": naryNamed(2, 2, func(name string, a []any) (any, error) { return arrayElemAt(name, a[0], a[1], 2) }),
		"$first":       naryNamed(1, 1, func(name string, a []any) (any, error) { return arrayElemAt(name, a[0], int32(0), 1) }),
		"$last":        naryNamed(1, 1, func(name string, a []any) (any, error) { return arrayElemAt(name, a[0], int32(-1), 1) }),
		"$in": nary(2, 2, func(a []any) (any, error) {
			arr, ok := a[1].(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40081, "$in requires an array as a second argument, found: %s", TypeName(a[1]))
			}
			for _, e := range arr {
				if Compare(a[0], e) == 0 {
					return true, nil
				}
			}
			return false, nil
		}),
		"$filter":       parseFilter,
		"$map":          parseMap,
		"$reduce":       parseReduce,
		"$concatArrays": nary(0, -1, concatArrays),
		"$slice":        nary(2, 3, slice),
		"$isArray": nary(1, 1, func(a []any) (any, error) {
			_, ok := a[0].(bson.A)
			return ok, nil
		}),
		"$reverseArray": nary(1, 1, func(a []any) (any, error) {
			if nullish(a[0]) {
				return nil, nil
			}
			arr, ok := a[0].(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location34435, "The argument to $reverseArray must be an array, but was of type: %s", TypeName(a[0]))
			}
			out := make(bson.A, len(arr))
			for i, e := range arr {
				out[len(arr)-1-i] = e
			}
			return out, nil
		}),
		"$range":        nary(2, 3, rangeOp),
		"$indexOfArray": naryNamed(2, 4, indexOfArray),
	}
}

func arrayElemAt(name string, array, index any, arity int) (any, error) {
	if nullish(array) || nullish(index) {
		return nil, nil
	}
	arr, ok := array.(bson.A)
	if !ok {
		which := "first argument"
		if arity == 1 {
			which = "argument"
		}
		return nil, mongoerr.Newf(mongoerr.Location28689, "%s's %s must be an array, but is %s", name, which, TypeName(array))
	}
	if !isNumber(index) {
		return nil, mongoerr.Newf(mongoerr.Location28690, "%s's second argument must be a numeric value, but is %s", name, TypeName(index))
	}
	i, ok := int32Of(index)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location28691, "%s's second argument must be representable as a 32-bit integer: %v", name, toFloat(index))
	}
	if i < 0 {
		i += len(arr)
	}
	if i < 0 || i >= len(arr) {
		return Missing, nil
	}
	return arr[i], nil
}

// parseIteration parses $filter's and $map's {input, as, <body>}: the
// body sees the element as $$<as> ($$this by default).
func parseIteration(name string, arg any, s *Scope, body string, codes [5]mongoerr.Code) (input Expr, slot int, bodyE Expr, limit Expr, err error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, 0, nil, nil, mongoerr.Newf(codes[0], "%s only supports an object as its argument", name)
	}
	var inputV, bodyV, limitV any
	hasInput, hasBody, hasLimit := false, false, false
	as := "this"
	for _, e := range d {
		switch {
		case e.Key == "input":
			inputV, hasInput = e.Value, true
		case e.Key == "as":
			a, ok := e.Value.(string)
			if !ok {
				return nil, 0, nil, nil, mongoerr.Newf(mongoerr.FailedToParse, "%s: 'as' must be a string", name)
			}
			as = a
		case e.Key == body:
			bodyV, hasBody = e.Value, true
		case e.Key == "limit" && name == "$filter":
			limitV, hasLimit = e.Value, true
		default:
			return nil, 0, nil, nil, mongoerr.Newf(codes[1], "Unrecognized parameter to %s: %s", name, e.Key)
		}
	}
	if !hasInput {
		return nil, 0, nil, nil, mongoerr.Newf(codes[2], "Missing 'input' parameter to %s", name)
	}
	if !hasBody {
		return nil, 0, nil, nil, mongoerr.Newf(codes[3], "Missing '%s' parameter to %s", body, name)
	}
	if err := checkVarName(as); err != nil {
		return nil, 0, nil, nil, err
	}
	if input, err = Parse(inputV, s); err != nil {
		return nil, 0, nil, nil, err
	}
	if hasLimit {
		if limit, err = Parse(limitV, s); err != nil {
			return nil, 0, nil, nil, err
		}
	}
	inner, slot := s.bind(as)
	if bodyE, err = Parse(bodyV, inner); err != nil {
		return nil, 0, nil, nil, err
	}
	return input, slot, bodyE, limit, nil
}

// iterationInput evaluates the input of $filter or $map: the array, or
// null when it is null or missing (the operator then yields null), or
// code's error when it is anything else.
func iterationInput(c *Ctx, input Expr, op string, code mongoerr.Code) (arr bson.A, null bool, err error) {
	v, err := input.Eval(c)
	if err != nil || nullish(v) {
		return nil, err == nil, err
	}
	arr, ok := v.(bson.A)
	if !ok {
		return nil, false, mongoerr.Newf(code, "input to %s must be an array not %s", op, TypeName(v))
	}
	return arr, false, nil
}

func parseFilter(name string, arg any, s *Scope) (Expr, error) {
	input, slot, cond, limit, err := parseIteration(name, arg, s, "cond",
		[5]mongoerr.Code{mongoerr.Location28646, mongoerr.Location28647, mongoerr.Location28648, mongoerr.Location28650, mongoerr.Location28651})
	if err != nil {
		return nil, err
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		arr, null, err := iterationInput(c, input, "$filter", mongoerr.Location28651)
		if null || err != nil {
			return nil, err
		}
		max := -1
		if limit != nil {
			l, err := limit.Eval(c)
			if err != nil {
				return nil, err
			}
			if !nullish(l) {
				n, ok := int32Of(l)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location327391, "$filter: limit must be represented as a 32-bit integral value: %s", FormatValue(l))
				}
				if n <= 0 {
					return nil, mongoerr.Newf(mongoerr.Location327392, "$filter: limit must be greater than 0: %d", n)
				}
				max = n
			}
		}
		out := bson.A{}
		for _, e := range arr {
			c.setLocal(slot, e)
			keep, err := cond.Eval(c)
			if err != nil {
				return nil, err
			}
			if Truthy(keep) {
				out = append(out, e)
				if len(out) == max {
					break
				}
			}
		}
		return out, nil
	}}, nil
}

func parseMap(name string, arg any, s *Scope) (Expr, error) {
	input, slot, in, _, err := parseIteration(name, arg, s, "in",
		[5]mongoerr.Code{mongoerr.Location16878, mongoerr.Location16879, mongoerr.Location16880, mongoerr.Location16882, mongoerr.Location16883})
	if err != nil {
		return nil, err
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		arr, null, err := iterationInput(c, input, "$map", mongoerr.Location16883)
		if null || err != nil {
			return nil, err
		}
		out := make(bson.A, len(arr))
		for i, e := range arr {
			c.setLocal(slot, e)
			r, err := in.Eval(c)
			if err != nil {
				return nil, err
			}
			if IsMissing(r) {
				r = nil
			}
			out[i] = r
		}
		return out, nil
	}}, nil
}

func parseReduce(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40075, "$reduce requires an object as an argument, found: %s", TypeName(arg))
	}
	inner, thisSlot := s.bind("this")
	inner, valueSlot := inner.bind("value")
	var input, initial, in Expr
	for _, e := range d {
		var err error
		switch e.Key {
		case "input":
			input, err = Parse(e.Value, s)
		case "initialValue":
			initial, err = Parse(e.Value, s)
		case "in":
			in, err = Parse(e.Value, inner)
		default:
			return nil, mongoerr.Newf(mongoerr.Location40076, "$reduce found an unknown argument: %s", e.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case input == nil:
		return nil, mongoerr.New(mongoerr.Location40077, "$reduce requires 'input' to be specified")
	case initial == nil:
		return nil, mongoerr.New(mongoerr.Location40078, "$reduce requires 'initialValue' to be specified")
	case in == nil:
		return nil, mongoerr.New(mongoerr.Location40079, "$reduce requires 'in' to be specified")
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		v, err := input.Eval(c)
		if err != nil {
			return nil, err
		}
		if nullish(v) {
			return nil, nil
		}
		arr, ok := v.(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location40080, "$reduce requires that 'input' be an array, found: %s", FormatValue(v))
		}
		acc, err := initial.Eval(c)
		if err != nil {
			return nil, err
		}
		for _, e := range arr {
			c.setLocal(thisSlot, e)
			c.setLocal(valueSlot, acc)
			if acc, err = in.Eval(c); err != nil {
				return nil, err
			}
		}
		return acc, nil
	}}, nil
}

func concatArrays(args []any) (any, error) {
	out := bson.A{}
	for _, v := range args {
		if nullish(v) {
			return nil, nil
		}
		arr, ok := v.(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location28664, "$concatArrays only supports arrays, not %s", TypeName(v))
		}
		out = append(out, arr...)
	}
	return out, nil
}

func slice(a []any) (any, error) {
	if nullish(a[0]) || nullish(a[1]) {
		return nil, nil
	}
	arr, ok := a[0].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location28724, "First argument to $slice must be an array, but is of type: %s", TypeName(a[0]))
	}
	if !isNumber(a[1]) {
		return nil, mongoerr.Newf(mongoerr.Location28725, "Second argument to $slice must be a numeric value, but is of type: %s", TypeName(a[1]))
	}
	n, ok := int32Of(a[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location28726, "Second argument to $slice can't be represented as a 32-bit integer: %v", toFloat(a[1]))
	}
	size := len(arr)
	start, end := 0, size
	if len(a) == 2 {
		if n >= 0 {
			end = min(size, n)
		} else {
			start = max(0, size+n)
		}
	} else {
		if n < 0 {
			start = max(0, size+n)
		} else {
			start = min(size, n)
		}
		if nullish(a[2]) {
			return nil, nil
		}
		if !isNumber(a[2]) {
			return nil, mongoerr.Newf(mongoerr.Location28727, "Third argument to $slice must be numeric, but is of type: %s", TypeName(a[2]))
		}
		count, ok := int32Of(a[2])
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location28728, "Third argument to $slice can't be represented as a 32-bit integer: %v", toFloat(a[2]))
		}
		if count <= 0 {
			return nil, mongoerr.Newf(mongoerr.Location28729, "Third argument to $slice must be positive: %d", count)
		}
		end = min(start+count, size)
	}
	return append(bson.A{}, arr[start:end]...), nil
}

func rangeOp(a []any) (any, error) {
	if !isNumber(a[0]) {
		return nil, mongoerr.Newf(mongoerr.Location34443, "$range requires a numeric starting value, found value of type: %s", TypeName(a[0]))
	}
	start, ok := int32Of(a[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34444, "$range requires a starting value that can be represented as a 32-bit integer, found value: %s", FormatValue(a[0]))
	}
	if !isNumber(a[1]) {
		return nil, mongoerr.Newf(mongoerr.Location34445, "$range requires a numeric ending value, found value of type: %s", TypeName(a[1]))
	}
	end, ok := int32Of(a[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34446, "$range requires an ending value that can be represented as a 32-bit integer, found value: %s", FormatValue(a[1]))
	}
	step := 1
	if len(a) == 3 {
		if !isNumber(a[2]) {
			return nil, mongoerr.Newf(mongoerr.Location34447, "$range requires a numeric step value, found value of type:%s", TypeName(a[2]))
		}
		if step, ok = int32Of(a[2]); !ok {
			return nil, mongoerr.Newf(mongoerr.Location34448, "$range requires a step value that can be represented as a 32-bit integer, found value: %s", FormatValue(a[2]))
		}
		if step == 0 {
			return nil, mongoerr.New(mongoerr.Location34449, "$range requires a non-zero step value")
		}
	}
	if n := (int64(end) - int64(start)) / int64(step); n > maxRangeElements {
		return nil, mongoerr.Newf(mongoerr.ExceededMemoryLimit, "$range would produce %d elements, more than tierdb's limit of %d", n, maxRangeElements)
	}
	out := bson.A{}
	for i := int64(start); (step > 0 && i < int64(end)) || (step < 0 && i > int64(end)); i += int64(step) {
		out = append(out, int32(i))
	}
	return out, nil
}

func indexOfArray(name string, a []any) (any, error) {
	if nullish(a[0]) {
		return nil, nil
	}
	arr, ok := a[0].(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40090, "$indexOfArray requires an array as a first argument, found: %s", TypeName(a[0]))
	}
	start, end, err := indexArgs(name, a, len(arr))
	if err != nil {
		return nil, err
	}
	for i := start; i < end; i++ {
		if Compare(arr[i], a[1]) == 0 {
			return int32(i), nil
		}
	}
	return int32(-1), nil
}
