package query

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Argument parsing for the operators whose operand is not simply a value.

func parseIn(op string, arg any) (fieldExpr, error) {
	a, ok := asArray(arg)
	if !ok {
		return nil, badValue("%s needs an array", op)
	}
	var values []any
	var regexes []regexPred
	for _, v := range a {
		v = normalize(v)
		switch x := v.(type) {
		case bson.Regex:
			p, err := compileRegex(x.Pattern, x.Options)
			if err != nil {
				return nil, err
			}
			regexes = append(regexes, p)
			continue
		case bson.Undefined:
			return nil, badValue("InMatchExpression equality cannot be undefined")
		}
		if _, ok := operatorDoc(v); ok {
			return nil, badValue("cannot nest $ under %s", op)
		}
		values = append(values, v)
	}
	return leafExpr{pred: newInPred(values, regexes), mode: leafExpand}, nil
}

// truthy is MongoDB's truth value of an operator argument, for $exists.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, bson.Undefined:
		return false
	case bool:
		return x
	case int32, int64, float64, bson.Decimal128:
		return Compare(x, int32(0)) != 0
	}
	return true
}

func parseType(arg any) (typePred, error) {
	var p typePred
	add := func(v any) error {
		switch x := normalize(v).(type) {
		case string:
			if x == "number" {
				p.number = true
				return nil
			}
			c, ok := typeAlias(x)
			if !ok {
				return badValue("Unknown type name alias: %s", x)
			}
			p.codes = append(p.codes, c)
			return nil
		case int32, int64, float64, bson.Decimal128:
			f, _ := numberAsFloat(x)
			if f != math.Trunc(f) || !validTypeCode(int(f)) {
				return badValue("Invalid numerical type code: %s", formatNumber(x))
			}
			p.codes = append(p.codes, int(f))
			return nil
		}
		return badValue("type must be represented as a number or a string")
	}
	if a, ok := asArray(arg); ok {
		if len(a) == 0 {
			return p, badValue("$type must match at least one type")
		}
		for _, v := range a {
			if err := add(v); err != nil {
				return p, err
			}
		}
		return p, nil
	}
	return p, add(arg)
}

func formatNumber(v any) string {
	if d, ok := v.(bson.Decimal128); ok {
		return d.String()
	}
	return fmt.Sprint(v)
}

func parseSize(arg any) (int, error) {
	f, ok := numberAsFloat(arg)
	if !ok {
		return 0, badValue("$size needs a number")
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, badValue("$size must be a whole number")
	}
	if f < 0 {
		return 0, badValue("$size may not be negative")
	}
	if f > math.MaxInt32 {
		return 0, badValue("$size must be representable as a 32-bit integer")
	}
	return int(f), nil
}

func parseMod(arg any) (modPred, error) {
	a, ok := asArray(arg)
	if !ok {
		return modPred{}, badValue("malformed mod, needs to be an array")
	}
	switch {
	case len(a) < 2:
		return modPred{}, badValue("malformed mod, not enough elements")
	case len(a) > 2:
		return modPred{}, badValue("malformed mod, too many elements")
	}
	var n [2]int64
	for i, name := range []string{"divisor", "remainder"} {
		v := normalize(a[i])
		if bracketOf(v) != brNumber {
			return modPred{}, badValue("malformed mod, %s not a number", name)
		}
		x, ok := truncToInt64(v)
		if !ok {
			return modPred{}, badValue("malformed mod, %s value is invalid", name)
		}
		n[i] = x
	}
	if n[0] == 0 {
		return modPred{}, badValue("divisor cannot be 0")
	}
	return modPred{divisor: n[0], remainder: n[1]}, nil
}
