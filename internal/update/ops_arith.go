package update

import (
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
