package expr

import (
	"tierdb/internal/mongoerr"
)

// The bitwise operators take ints and longs only; null or missing gives
// null. $bitAnd, $bitOr and $bitXor refuse any other operand with
// TypeMismatch; $bitNot, a single-number operator, refuses a non-number
// with 28765 as $abs does and another number (a double, a decimal) with
// TypeMismatch. The result is an int when every operand is one, else a
// long. With no operands $bitAnd is -1 and $bitOr and $bitXor are 0.

func bitOps() map[string]parser {
	return map[string]parser{
		"$bitAnd": naryNamed(0, -1, bitwise(-1, func(a, b int64) int64 { return a & b })),
		"$bitOr":  naryNamed(0, -1, bitwise(0, func(a, b int64) int64 { return a | b })),
		"$bitXor": naryNamed(0, -1, bitwise(0, func(a, b int64) int64 { return a ^ b })),
		"$bitNot": unaryNumeric(bitNot),
	}
}

func bitwise(identity int64, op func(a, b int64) int64) func(name string, args []any) (any, error) {
	return func(name string, args []any) (any, error) {
		acc, long := identity, false
		for _, v := range args {
			if nullish(v) {
				return nil, nil
			}
			switch x := v.(type) {
			case int32:
				acc = op(acc, int64(x))
			case int64:
				acc, long = op(acc, x), true
			default:
				return nil, mongoerr.Newf(mongoerr.TypeMismatch, "%s only supports int and long operands.", name)
			}
		}
		if long {
			return acc, nil
		}
		return int32(acc), nil
	}
}

func bitNot(v any) (any, error) {
	switch x := v.(type) {
	case int32:
		return ^x, nil
	case int64:
		return ^x, nil
	}
	return nil, mongoerr.Newf(mongoerr.TypeMismatch, "$bitNot only supports int and long, not: %s.", TypeName(v))
}
