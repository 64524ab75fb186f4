package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/update"
)

// The trigonometric operators: one number in radians (or, for the
// inverse functions, a ratio), a double out; null for null or missing,
// 28765 for anything else. An argument outside a function's domain is
// 50989. A Decimal128 argument is refused like $exp's: tierdb has no
// decimal transcendental functions, and a double's 16 digits are fewer
// than MongoDB's 34. $degreesToRadians and $radiansToDegrees are exact
// multiplications, so they take decimals too (by π/180 or 180/π rounded
// to 34 digits, as MongoDB's constants are).

// trigDomain is where a function is defined: lo and hi, each bound
// included or not; the text is what the error shows.
type trigDomain struct {
	lo, hi     float64
	loIn, hiIn bool
	text       string
}

var (
	anyFinite  = &trigDomain{lo: math.Inf(-1), hi: math.Inf(1), text: "(-inf,inf)"}
	unitRange  = &trigDomain{lo: -1, hi: 1, loIn: true, hiIn: true, text: "[-1,1]"}
	atLeastOne = &trigDomain{lo: 1, hi: math.Inf(1), loIn: true, hiIn: true, text: "[1,inf]"}
)

func (d *trigDomain) contains(f float64) bool {
	if math.IsNaN(f) {
		return true
	}
	above := f > d.lo || (d.loIn && f == d.lo)
	below := f < d.hi || (d.hiIn && f == d.hi)
	return above && below
}

func trigOps() map[string]parser {
	return map[string]parser{
		"$sin":              unaryNumeric(trigFn("$sin", math.Sin, anyFinite)),
		"$cos":              unaryNumeric(trigFn("$cos", math.Cos, anyFinite)),
		"$tan":              unaryNumeric(trigFn("$tan", math.Tan, anyFinite)),
		"$asin":             unaryNumeric(trigFn("$asin", math.Asin, unitRange)),
		"$acos":             unaryNumeric(trigFn("$acos", math.Acos, unitRange)),
		"$atan":             unaryNumeric(trigFn("$atan", math.Atan, nil)),
		"$sinh":             unaryNumeric(trigFn("$sinh", math.Sinh, nil)),
		"$cosh":             unaryNumeric(trigFn("$cosh", math.Cosh, nil)),
		"$tanh":             unaryNumeric(trigFn("$tanh", math.Tanh, nil)),
		"$asinh":            unaryNumeric(trigFn("$asinh", math.Asinh, nil)),
		"$acosh":            unaryNumeric(trigFn("$acosh", math.Acosh, atLeastOne)),
		"$atanh":            unaryNumeric(trigFn("$atanh", math.Atanh, unitRange)),
		"$atan2":            nary(2, 2, atan2),
		"$degreesToRadians": unaryNumeric(angleFn(math.Pi/180, decimalPiOver180)),
		"$radiansToDegrees": unaryNumeric(angleFn(180/math.Pi, decimal180OverPi)),
	}
}

func trigFn(name string, fn func(float64) float64, domain *trigDomain) func(any) (any, error) {
	return func(v any) (any, error) {
		if _, ok := v.(bson.Decimal128); ok {
			return nil, mongoerr.Newf(mongoerr.NotImplemented, "%s of a Decimal128 is not supported by tierdb", name)
		}
		f := toFloat(v)
		if domain != nil && !domain.contains(f) {
			return nil, mongoerr.Newf(mongoerr.Location50989, "cannot apply %s to %s, value must be in %s", name, trigNumber(f), domain.text)
		}
		return fn(f), nil
	}
}

// trigNumber renders an argument as MongoDB's bound errors do.
func trigNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return numberString(f)
}

// atan2 checks its arguments in order, as MongoDB does: a first that is
// not a number fails even when the second is null.
func atan2(a []any) (any, error) {
	codes := [2]mongoerr.Code{mongoerr.Location51044, mongoerr.Location51045}
	for i, v := range a {
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(codes[i], "$atan2 only supports numeric types, not %s", TypeName(v))
		}
	}
	y, x := a[0], a[1]
	if width(y) == wDecimal || width(x) == wDecimal {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$atan2 of a Decimal128 is not supported by tierdb")
	}
	return math.Atan2(toFloat(y), toFloat(x)), nil
}

// The conversion factors in decimal: π/180 and 180/π rounded to 34
// digits, MongoDB's Decimal128 constants.
var (
	decimalPiOver180 = mustDecimal("0.01745329251994329576923690768488613")
	decimal180OverPi = mustDecimal("57.29577951308232087679815481410517")
)

func mustDecimal(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

func angleFn(factor float64, decimalFactor bson.Decimal128) func(any) (any, error) {
	return func(v any) (any, error) {
		if d, ok := v.(bson.Decimal128); ok {
			return update.DecimalMul(d, decimalFactor), nil
		}
		return toFloat(v) * factor, nil
	}
}
