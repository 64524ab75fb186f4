package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $getField, $setField and $unsetField read and write a field by its
// literal name, dots and leading dollars included, never as a path.
//
// $getField's field is any expression giving a string (MongoDB 7.2 and
// later), checked per document (3041704); its input ($$CURRENT by
// default, required in the object form) null, undefined or missing gives
// null, anything but a document 3041705; an absent field is missing.
// $setField's and $unsetField's field must be a constant string, checked
// when parsed (4161106-4161108); an input null or missing gives null,
// anything but a document 4161105; a value that is missing ($$REMOVE)
// removes the field.

func fieldOps() map[string]parser {
	return map[string]parser{
		"$getField":   parseGetField,
		"$setField":   parseSetField,
		"$unsetField": parseSetField,
	}
}

// isOptionsDoc: a document whose first key is not an operator.
func isOptionsDoc(arg any) (bson.D, bool) {
	d, ok := arg.(bson.D)
	if !ok || (len(d) > 0 && strings.HasPrefix(d[0].Key, "$")) {
		return nil, false
	}
	return d, true
}

func parseGetField(_ string, arg any, s *Scope) (Expr, error) {
	fieldArg, inputArg := arg, any("$$CURRENT")
	if d, ok := isOptionsDoc(arg); ok {
		var hasField, hasInput bool
		for _, e := range d {
			switch e.Key {
			case "field":
				fieldArg, hasField = e.Value, true
			case "input":
				inputArg, hasInput = e.Value, true
			default:
				return nil, mongoerr.Newf(mongoerr.Location3041701, "$getField found an unknown argument: %s", e.Key)
			}
		}
		if !hasField {
			return nil, mongoerr.New(mongoerr.Location3041702, "$getField requires 'field' to be specified")
		}
		if !hasInput {
			return nil, mongoerr.New(mongoerr.Location3041703, "$getField requires 'input' to be specified")
		}
	}
	field, err := Parse(fieldArg, s)
	if err != nil {
		return nil, err
	}
	input, err := Parse(inputArg, s)
	if err != nil {
		return nil, err
	}
	return &lazyExpr{args: []Expr{field, input}, fn: evalGetField}, nil
}

func evalGetField(c *Ctx, a []Expr) (any, error) {
	f, err := a[0].Eval(c)
	if err != nil {
		return nil, err
	}
	name, ok := f.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location3041704, "$getField requires 'field' to evaluate to type String, but got %s", TypeName(f))
	}
	in, err := a[1].Eval(c)
	if err != nil || nullish(in) {
		return nil, err
	}
	d, ok := in.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location3041705, "$getField requires 'input' to evaluate to type Object, but got %s", TypeName(in))
	}
	if v, ok := field(d, name); ok {
		return v, nil
	}
	return Missing, nil
}

func parseSetField(name string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location4161100, "%s only supports an object as its argument", name)
	}
	unset := name == "$unsetField"
	var fieldArg, inputArg, valueArg any
	var hasField, hasInput, hasValue bool
	for _, e := range d {
		switch {
		case e.Key == "field":
			fieldArg, hasField = e.Value, true
		case e.Key == "input":
			inputArg, hasInput = e.Value, true
		case e.Key == "value" && !unset:
			valueArg, hasValue = e.Value, true
		default:
			return nil, mongoerr.Newf(mongoerr.Location4161101, "%s found an unknown argument: %s", name, e.Key)
		}
	}
	switch {
	case !hasField:
		return nil, mongoerr.Newf(mongoerr.Location4161102, "%s requires 'field' to be specified", name)
	case !hasValue && !unset:
		return nil, mongoerr.Newf(mongoerr.Location4161103, "%s requires 'value' to be specified", name)
	case !hasInput:
		return nil, mongoerr.Newf(mongoerr.Location4161109, "%s requires 'input' to be specified", name)
	}
	fieldName, err := constantFieldName(name, fieldArg, s)
	if err != nil {
		return nil, err
	}
	input, err := Parse(inputArg, s)
	if err != nil {
		return nil, err
	}
	value := Expr(constant{Missing})
	if !unset {
		if value, err = Parse(valueArg, s); err != nil {
			return nil, err
		}
	}
	return &lazyExpr{args: []Expr{input, value}, fn: func(c *Ctx, a []Expr) (any, error) {
		return evalSetField(c, name, fieldName, a[0], a[1])
	}}, nil
}

// constantFieldName is $setField's field: a string known when parsed.
// Only literals and $literal count as constants here; MongoDB would also
// fold an operator over constants ({$concat: ["a", "b"]}), which tierdb
// refuses with 4161106.
func constantFieldName(op string, arg any, s *Scope) (string, error) {
	if str, ok := arg.(string); ok && strings.HasPrefix(str, "$") {
		return "", mongoerr.Newf(mongoerr.Location4161108, "A field path reference which is not allowed in this context. Did you mean {$literal: '%s'}?", str)
	}
	e, err := Parse(arg, s)
	if err != nil {
		return "", err
	}
	k, ok := e.(constant)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location4161106, "%s requires 'field' to evaluate to a constant, but got a non-constant argument", op)
	}
	str, ok := k.v.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location4161107, "%s requires 'field' to evaluate to type String, but got %s", op, TypeName(k.v))
	}
	return str, nil
}

func evalSetField(c *Ctx, op, name string, inputE, valueE Expr) (any, error) {
	in, err := inputE.Eval(c)
	if err != nil || nullish(in) {
		return nil, err
	}
	d, ok := in.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location4161105, "%s requires 'input' to evaluate to type Object", op)
	}
	v, err := valueE.Eval(c)
	if err != nil {
		return nil, err
	}
	if !IsMissing(v) {
		return setField(append(bson.D{}, d...), name, v), nil
	}
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		if e.Key != name {
			out = append(out, e)
		}
	}
	return out, nil
}
