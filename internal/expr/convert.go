package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/update"
)

func typeOps() map[string]parser {
	ops := map[string]parser{
		"$type":     nary(1, 1, func(a []any) (any, error) { return TypeName(a[0]), nil }),
		"$isNumber": nary(1, 1, func(a []any) (any, error) { return isNumber(a[0]), nil }),
		"$convert":  parseConvert,
	}
	for op, target := range map[string]string{
		"$toInt": "int", "$toLong": "long", "$toDouble": "double", "$toDecimal": "decimal",
		"$toString": "string", "$toBool": "bool", "$toDate": "date", "$toObjectId": "objectId",
	} {
		ops[op] = func(name string, arg any, s *Scope) (Expr, error) {
			list, isArray := arg.(bson.A)
			if !isArray {
				list = bson.A{arg}
			}
			if len(list) != 1 {
				return nil, mongoerr.Newf(mongoerr.Location50723, "%s requires a single argument, got %d", name, len(list))
			}
			in, err := Parse(list[0], s)
			if err != nil {
				return nil, err
			}
			return &convertExpr{input: in, to: constant{target}}, nil
		}
	}
	return ops
}

type convertExpr struct {
	input, to       Expr
	onError, onNull Expr
}

func parseConvert(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "$convert expects an object of named arguments but found: %s", TypeName(arg))
	}
	c := &convertExpr{}
	for _, e := range d {
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "input":
			c.input = x
		case "to":
			c.to = x
		case "onError":
			c.onError = x
		case "onNull":
			c.onNull = x
		default:
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "$convert found an unknown argument: %s", e.Key)
		}
	}
	if c.input == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'input' parameter to $convert")
	}
	if c.to == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'to' parameter to $convert")
	}
	return c, nil
}

// typeNames maps $convert's numeric 'to' codes to type names.
var typeNames = map[int]string{
	1: "double", 2: "string", 3: "object", 4: "array", 5: "binData", 6: "undefined", 7: "objectId",
	8: "bool", 9: "date", 10: "null", 11: "regex", 12: "dbPointer", 13: "javascript", 14: "symbol",
	15: "javascriptWithScope", 16: "int", 17: "timestamp", 18: "long", 19: "decimal", -1: "minKey", 127: "maxKey",
}

func targetType(v any) (string, error) {
	switch x := v.(type) {
	case string:
		if x == "missing" {
			return x, nil
		}
		for _, n := range typeNames {
			if n == x {
				return x, nil
			}
		}
		return "", mongoerr.Newf(mongoerr.BadValue, "Unknown type name: %s", x)
	case int32, int64, float64, bson.Decimal128:
		n, ok := int32Of(x)
		if !ok {
			return "", mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric 'to' argument is not an integer")
		}
		name, ok := typeNames[n]
		if !ok {
			return "", mongoerr.Newf(mongoerr.FailedToParse, "In $convert, numeric value for 'to' does not correspond to a BSON type: %d", n)
		}
		return name, nil
	}
	return "", mongoerr.Newf(mongoerr.FailedToParse, "$convert's 'to' argument must be a string or number, but is %s", TypeName(v))
}

func (c *convertExpr) Eval(ctx *Ctx) (any, error) {
	toV, err := c.to.Eval(ctx)
	if err != nil {
		return nil, err
	}
	in, err := c.input.Eval(ctx)
	if err != nil {
		return nil, err
	}
	target := ""
	if !nullish(toV) {
		if target, err = targetType(toV); err != nil {
			return nil, err
		}
	}
	if nullish(in) {
		if c.onNull != nil {
			return c.onNull.Eval(ctx)
		}
		return nil, nil
	}
	if target == "" {
		return nil, nil
	}
	out, err := convert(in, target)
	if e, ok := mongoerr.As(err); ok && e.Code == mongoerr.ConversionFailure && c.onError != nil {
		return c.onError.Eval(ctx)
	}
	return out, err
}

func conversionFailure(format string, args ...any) error {
	return mongoerr.Newf(mongoerr.ConversionFailure, format, args...)
}

// convert is $convert's table of conversions.
func convert(v any, to string) (any, error) {
	unsupported := conversionFailure("Unsupported conversion from %s to %s in $convert with no onError value", TypeName(v), to)
	if TypeName(v) == to {
		return v, nil
	}
	switch to {
	case "bool":
		switch v.(type) {
		case bool, int32, int64, float64, bson.Decimal128, bson.DateTime:
			return Truthy(v), nil
		}
		return true, nil
	case "string":
		switch x := v.(type) {
		case bool:
			return strconv.FormatBool(x), nil
		case int32, int64, float64, bson.Decimal128:
			return numberString(x), nil
		case bson.ObjectID:
			return x.Hex(), nil
		case bson.DateTime:
			return formatISO(x), nil
		}
	case "int", "long":
		return toInteger(v, to)
	case "double":
		switch x := v.(type) {
		case bool:
			if x {
				return 1.0, nil
			}
			return 0.0, nil
		case int32, int64:
			return toFloat(x), nil
		case bson.Decimal128:
			f := toFloat(x)
			if math.IsInf(f, 0) && x.IsInf() == 0 {
				return nil, conversionFailure("Conversion would overflow target type in $convert with no onError value: %s", x)
			}
			return f, nil
		case bson.DateTime:
			return float64(x), nil
		case string:
			return parseNumber(x, to)
		}
	case "decimal":
		switch x := v.(type) {
		case bool:
			if x {
				return update.DecimalAdd(int32(1), int32(0)), nil
			}
			return update.DecimalAdd(int32(0), int32(0)), nil
		case int32, int64, float64:
			return update.ToDecimal(x).Decimal128(), nil
		case bson.DateTime:
			return update.ToDecimal(int64(x)).Decimal128(), nil
		case string:
			return parseNumber(x, to)
		}
	case "date":
		switch x := v.(type) {
		case int64:
			return bson.DateTime(x), nil
		case float64, bson.Decimal128:
			n, err := toInteger(x, "long")
			if err != nil {
				return nil, err
			}
			return bson.DateTime(n.(int64)), nil
		case bson.ObjectID:
			return bson.NewDateTimeFromTime(x.Timestamp()), nil
		case bson.Timestamp:
			return bson.DateTime(int64(x.T) * 1000), nil
		case string:
			return parseDate(x)
		}
	case "objectId":
		if s, ok := v.(string); ok {
			id, err := bson.ObjectIDFromHex(s)
			if err != nil || len(s) != 24 {
				return nil, conversionFailure("Failed to parse objectId '%s' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found %d", s, len(s))
			}
			return id, nil
		}
	}
	return nil, unsupported
}

func toInteger(v any, to string) (any, error) {
	overflow := func() error {
		return conversionFailure("Conversion would overflow target type in $convert with no onError value: %s", FormatValue(v))
	}
	var n int64
	switch x := v.(type) {
	case bool:
		if x {
			n = 1
		}
	case int32:
		n = int64(x)
	case int64:
		n = x
	case float64, bson.Decimal128:
		f := toFloat(x)
		if math.IsNaN(f) {
			return nil, conversionFailure("Attempt to convert NaN value to integer type in $convert with no onError value")
		}
		if math.IsInf(f, 0) {
			if d, ok := x.(bson.Decimal128); !ok || d.IsInf() != 0 {
				return nil, conversionFailure("Attempt to convert infinity value to integer type in $convert with no onError value")
			}
		}
		if f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
			return nil, overflow()
		}
		n = int64(f) // toward zero
	case bson.DateTime:
		if to == "int" {
			return nil, conversionFailure("Unsupported conversion from date to int in $convert with no onError value")
		}
		n = int64(x)
	case string:
		return parseNumber(x, to)
	default:
		return nil, conversionFailure("Unsupported conversion from %s to %s in $convert with no onError value", TypeName(v), to)
	}
	if to == "int" {
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, overflow()
		}
		return int32(n), nil
	}
	return n, nil
}

func parseNumber(s, to string) (any, error) {
	fail := func(reason string) error {
		return conversionFailure("Failed to parse number '%s' in $convert with no onError value: %s", s, reason)
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return nil, conversionFailure("Illegal hexadecimal input in $convert with no onError value: %s", s)
	}
	switch to {
	case "int", "long":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fail("Did not consume whole string.")
		}
		if to == "int" {
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, fail("Out of range")
			}
			return int32(n), nil
		}
		return n, nil
	case "double":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return nil, fail("Did not consume whole string.")
		}
		return f, nil
	}
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return nil, fail("Failed to parse string to decimal")
	}
	return d, nil
}

// parseDate reads the ISO 8601 forms MongoDB's $toDate accepts most
// often: a date, a date and time with optional fraction, and a zone ('Z'
// or an offset; none means UTC).
func parseDate(s string) (any, error) {
	for _, layout := range []string{
		time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return bson.NewDateTimeFromTime(t), nil
		}
	}
	return nil, conversionFailure("Error parsing date string '%s' in $convert with no onError value", s)
}
