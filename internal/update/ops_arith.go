package update

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// arithMod is $inc (mul false) and $mul (mul true).
type arithMod struct {
	name string
	arg  any
	mul  bool
}

func parseInc(path string, arg any) (modifier, error) {
	if !isNumber(arg) {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch,
			"Cannot increment with non-numeric argument: %s", formatElem(path, arg))
	}
	return &arithMod{name: "$inc", arg: arg}, nil
}

func parseMul(path string, arg any) (modifier, error) {
	if !isNumber(arg) {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch,
			"Cannot multiply with non-numeric argument: %s", formatElem(path, arg))
	}
	return &arithMod{name: "$mul", arg: arg, mul: true}, nil
}

func (m *arithMod) apply(c *applyCtx, op *fieldOp) error {
	old, ok := getPath(*c.root, op.parts)
	if !ok {
		// A missing field behaves as a zero of the argument's type.
		v := m.arg
		if m.mul {
			v = zeroLike(m.arg)
		}
		return setPath(c.root, op.parts, v)
	}
	if !isNumber(old) {
		return mongoerr.Newf(mongoerr.TypeMismatch,
			"Cannot apply %s to a value of non-numeric type. {%s} has the field '%s' of non-numeric type %s",
			m.name, idText(c.orig), op.parts[len(op.parts)-1], query.TypeName(old))
	}
	v, ok := arith(old, m.arg, m.mul)
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue,
			"Failed to apply %s operations to current value (%s) for document {%s}",
			m.name, numberDebug(old), idText(c.orig))
	}
	if identical(old, v) {
		return nil
	}
	return setPath(c.root, op.parts, v)
}

// minMaxMod is $min (max false) and $max (max true), ordered by MongoDB's
// comparison across types.
type minMaxMod struct {
	value any
	max   bool
}

func parseMin(_ string, arg any) (modifier, error) { return &minMaxMod{value: arg}, nil }
func parseMax(_ string, arg any) (modifier, error) { return &minMaxMod{value: arg, max: true}, nil }

func (m *minMaxMod) apply(c *applyCtx, op *fieldOp) error {
	if old, ok := getPath(*c.root, op.parts); ok {
		cmp := compareValues(m.value, old)
		if (m.max && cmp <= 0) || (!m.max && cmp >= 0) {
			return nil
		}
	}
	return setPath(c.root, op.parts, deepCopy(m.value))
}

// bitMod is $bit: and, or, xor with int32 or int64 operands, applied in
// the order given. int32 with int32 stays int32; anything with an int64
// is an int64.
type bitMod struct{ ops []bitOp }

type bitOp struct {
	op      string // "and", "or", "xor"
	operand any    // int32 or int64
}

func parseBit(_ string, arg any) (modifier, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.BadValue,
			"The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}",
			query.TypeName(arg))
	}
	m := &bitMod{}
	for _, e := range d {
		switch e.Key {
		case "and", "or", "xor":
		default:
			return nil, mongoerr.Newf(mongoerr.BadValue,
				"The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: {%s: %s}",
				e.Key, e.Key, formatValue(e.Value))
		}
		switch e.Value.(type) {
		case int32, int64:
		default:
			return nil, mongoerr.Newf(mongoerr.BadValue,
				"The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: {%s: %s}",
				query.TypeName(e.Value), e.Key, formatValue(e.Value))
		}
		m.ops = append(m.ops, bitOp{op: e.Key, operand: e.Value})
	}
	if len(m.ops) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue,
			"You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
	}
	return m, nil
}

func (m *bitMod) apply(c *applyCtx, op *fieldOp) error {
	old, ok := getPath(*c.root, op.parts)
	var v any = int32(0)
	if ok {
		switch old.(type) {
		case int32, int64:
			v = old
		default:
			return mongoerr.Newf(mongoerr.BadValue,
				"Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s",
				idText(c.orig), op.parts[len(op.parts)-1], query.TypeName(old))
		}
	}
	for _, b := range m.ops {
		v = bitwise(b.op, v, b.operand)
	}
	if ok && identical(old, v) {
		return nil
	}
	return setPath(c.root, op.parts, v)
}

func bitwise(op string, a, b any) any {
	x32, aSmall := a.(int32)
	y32, bSmall := b.(int32)
	if aSmall && bSmall {
		switch op {
		case "and":
			return x32 & y32
		case "or":
			return x32 | y32
		}
		return x32 ^ y32
	}
	x, y := toInt64(a), toInt64(b)
	switch op {
	case "and":
		return x & y
	case "or":
		return x | y
	}
	return x ^ y
}
