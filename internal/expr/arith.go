package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/update"
)

// Numeric widening, as MongoDB's getWidestNumeric: int32 < int64 <
// double < decimal.
const (
	wInt = iota
	wLong
	wDouble
	wDecimal
)

func width(v any) int {
	switch v.(type) {
	case int64:
		return wLong
	case float64:
		return wDouble
	case bson.Decimal128:
		return wDecimal
	}
	return wInt
}

func arithmeticOps() map[string]parser {
	return map[string]parser{
		"$add":      nary(0, -1, add),
		"$subtract": nary(2, 2, subtract),
		"$multiply": nary(0, -1, multiply),
		"$divide":   nary(2, 2, divide),
		"$mod":      nary(2, 2, mod),
		"$abs":      unaryNumeric(absNum),
		"$ceil":     unaryNumeric(func(v any) (any, error) { return roundTo(v, 0, ceilMode), nil }),
		"$floor":    unaryNumeric(func(v any) (any, error) { return roundTo(v, 0, floorMode), nil }),
		"$sqrt":     unaryNumeric(sqrtNum),
		"$exp":      unaryNumeric(floatFn("$exp", math.Exp, nil)),
		"$ln":       unaryNumeric(floatFn("$ln", math.Log, positive(mongoerr.Location28766, "$ln's argument must be a positive number, but is %v"))),
		"$log10":    unaryNumeric(floatFn("$log10", math.Log10, positive(mongoerr.Location28761, "$log10's argument must be a positive number, but is %v"))),
		"$log":      nary(2, 2, logNum),
		"$pow":      nary(2, 2, pow),
		"$round":    naryNamed(1, 2, func(name string, a []any) (any, error) { return roundOp(name, a, halfEven) }),
		"$trunc":    naryNamed(1, 2, func(name string, a []any) (any, error) { return roundOp(name, a, towardZero) }),
		"$sum": accumulatorOp(func(vals []any) any {
			var s Sum
			for _, v := range vals {
				s.Add(v)
			}
			return s.Value()
		}),
		"$avg": accumulatorOp(func(vals []any) any {
			var s Sum
			for _, v := range vals {
				s.Add(v)
			}
			return s.Mean()
		}),
		"$min":        accumulatorOp(func(vals []any) any { return extreme(vals, -1) }),
		"$max":        accumulatorOp(func(vals []any) any { return extreme(vals, 1) }),
		"$stdDevPop":  accumulatorOp(func(vals []any) any { return stdDev(vals, true) }),
		"$stdDevSamp": accumulatorOp(func(vals []any) any { return stdDev(vals, false) }),
	}
}

// addState sums like MongoDB's $add: the narrowest type that holds the
// result, int64 overflowing into double; one date allowed.
type addState struct {
	wide int
	l    int64
	d    float64
	dec  *update.DecimalSum
	date bool
}

func (s *addState) add(v any) error {
	if dt, ok := v.(bson.DateTime); ok {
		if s.date {
			return mongoerr.New(mongoerr.Location16612, "only one date allowed in an $add expression")
		}
		s.date = true
		v = int64(dt)
	} else if w := width(v); w > s.wide {
		switch {
		case w == wDouble:
			s.d = float64(s.l)
		case w == wDecimal:
			s.dec = &update.DecimalSum{}
			if s.wide == wDouble {
				s.dec.Add(s.d)
			} else {
				s.dec.Add(s.l)
			}
		}
		s.wide = w
	}
	switch s.wide {
	case wInt, wLong:
		x := toLong(v)
		if r := s.l + x; (x > 0 && r < s.l) || (x < 0 && r > s.l) {
			s.wide, s.d = wDouble, float64(s.l)+float64(x)
		} else {
			s.l = r
		}
	case wDouble:
		s.d += toFloat(v)
	case wDecimal:
		s.dec.Add(v)
	}
	return nil
}

func (s *addState) value() (any, error) {
	if s.date {
		switch s.wide {
		case wDouble:
			if math.IsNaN(s.d) || s.d < math.MinInt64 || s.d >= math.MaxInt64 {
				return nil, mongoerr.New(mongoerr.Overflow, "date overflow in $add")
			}
			return bson.DateTime(int64(math.Round(s.d))), nil
		case wDecimal:
			return bson.DateTime(toLong(s.dec.Value())), nil
		}
		return bson.DateTime(s.l), nil
	}
	switch s.wide {
	case wInt:
		return intOrLong(s.l), nil
	case wLong:
		return s.l, nil
	case wDouble:
		return s.d, nil
	}
	return s.dec.Value(), nil
}

// Sum adds numbers as $sum and $avg do, in expressions and in $group:
// anything but a number is skipped; the result has the narrowest type
// that holds it (int32, int64, double), overflowing into double, and is an
// exact decimal once a Decimal128 was added.
type Sum struct {
	s addState
	n int64
}

// Add adds v if it is a number.
func (s *Sum) Add(v any) {
	if isNumber(v) {
		_ = s.s.add(v) // only a second date can fail, and v is a number
		s.n++
	}
}

// Value is the sum (int32 0 for none).
func (s *Sum) Value() any {
	v, _ := s.s.value()
	return v
}

// Mean is the mean of the numbers added: a double, or a decimal once a
// decimal was added; null for none.
func (s *Sum) Mean() any {
	switch {
	case s.n == 0:
		return nil
	case s.s.wide == wDecimal:
		return s.s.dec.Mean(s.n)
	case s.s.wide == wDouble:
		return s.s.d / float64(s.n)
	}
	return float64(s.s.l) / float64(s.n)
}

func add(args []any) (any, error) {
	var s addState
	for _, v := range args {
		if nullish(v) {
			return nil, nil
		}
		if _, isDate := v.(bson.DateTime); !isNumber(v) && !isDate {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "$add only supports numeric or date types, not %s", TypeName(v))
		}
		if err := s.add(v); err != nil {
			return nil, err
		}
	}
	return s.value()
}

func subtract(a []any) (any, error) {
	l, r := a[0], a[1]
	if isNumber(l) && isNumber(r) {
		switch max(width(l), width(r)) {
		case wDecimal:
			return update.DecimalAdd(l, negate(r)), nil
		case wDouble:
			return toFloat(l) - toFloat(r), nil
		case wLong:
			x, y := toLong(l), toLong(r)
			if d := x - y; (y > 0 && d > x) || (y < 0 && d < x) {
				return toFloat(l) - toFloat(r), nil
			} else {
				return d, nil
			}
		}
		return intOrLong(toLong(l) - toLong(r)), nil
	}
	if nullish(l) || nullish(r) {
		return nil, nil
	}
	if ld, ok := l.(bson.DateTime); ok {
		switch rv := r.(type) {
		case bson.DateTime:
			return int64(ld) - int64(rv), nil
		case int32, int64, float64, bson.Decimal128:
			return bson.DateTime(int64(ld) - toLong(rv)), nil
		}
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "can't $subtract %s from Date", TypeName(r))
	}
	return nil, mongoerr.Newf(mongoerr.TypeMismatch, "can't $subtract %s from %s", TypeName(r), TypeName(l))
}

func negate(v any) any {
	switch x := v.(type) {
	case int32:
		return -int64(x)
	case int64:
		if x == math.MinInt64 {
			return update.DecimalMul(x, int32(-1))
		}
		return -x
	case float64:
		return -x
	case bson.Decimal128:
		return update.DecimalMul(x, int32(-1))
	}
	return v
}

func multiply(args []any) (any, error) {
	wide := wInt
	l, d := int64(1), 1.0
	var dec any = int32(1)
	for _, v := range args {
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "$multiply only supports numeric types, not %s", TypeName(v))
		}
		old := wide
		wide = max(wide, width(v))
		if wide == wDecimal {
			if old != wDecimal {
				if old == wDouble {
					dec = d
				} else {
					dec = l
				}
			}
			dec = update.DecimalMul(dec, v)
			continue
		}
		f := toFloat(v)
		d *= f
		if wide != wDouble {
			x := toLong(v)
			if math.IsInf(f, 0) || math.IsNaN(f) || (x != 0 && (l*x)/x != l) || (l == -1 && x == math.MinInt64) || (x == -1 && l == math.MinInt64) {
				wide = wDouble
			} else {
				l *= x
			}
		}
	}
	switch wide {
	case wInt:
		return intOrLong(l), nil
	case wLong:
		return l, nil
	case wDouble:
		return d, nil
	}
	return dec, nil
}

func divide(a []any) (any, error) {
	l, r := a[0], a[1]
	if isNumber(l) && isNumber(r) {
		if width(l) == wDecimal || width(r) == wDecimal {
			return decimalDivide(l, r)
		}
		den := toFloat(r)
		if den == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
		}
		return toFloat(l) / den, nil
	}
	if nullish(l) || nullish(r) {
		return nil, nil
	}
	return nil, mongoerr.Newf(mongoerr.TypeMismatch, "$divide only supports numeric types, not %s and %s", TypeName(l), TypeName(r))
}

// decimalDivide divides exactly to 34 significant digits (half to even),
// using IEEE's preferred exponent (the dividend's minus the divisor's)
// when the quotient is exact.
func decimalDivide(l, r any) (any, error) {
	x, y := update.ToDecimal(l), update.ToDecimal(r)
	if y.NaN || x.NaN {
		return update.Decimal{NaN: true}.Decimal128(), nil
	}
	if y.Inf == 0 && y.Coef.Sign() == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
	}
	switch {
	case x.Inf != 0 && y.Inf != 0:
		return update.Decimal{NaN: true}.Decimal128(), nil
	case x.Inf != 0:
		return update.Decimal{Inf: x.Inf * y.Coef.Sign()}.Decimal128(), nil
	case y.Inf != 0:
		return update.Decimal{Coef: new(big.Int)}.Decimal128(), nil
	}
	pref := x.Exp - y.Exp
	shift := 36 + len(new(big.Int).Abs(y.Coef).String()) - len(new(big.Int).Abs(x.Coef).String())
	shift = max(shift, 0)
	num := new(big.Int).Mul(x.Coef, pow10(shift))
	q, rem := new(big.Int).QuoRem(num, y.Coef, new(big.Int))
	exp := pref - shift
	if rem.Sign() == 0 {
		ten := big.NewInt(10)
		for exp < pref {
			qq, m := new(big.Int).QuoRem(q, ten, new(big.Int))
			if m.Sign() != 0 {
				break
			}
			q, exp = qq, exp+1
		}
	} else {
		// A sticky digit: the exact quotient lies strictly between q and
		// q+1, which the rounding to 34 digits must see.
		q.Mul(q, big.NewInt(10))
		if num.Sign()*y.Coef.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
		exp--
	}
	return update.Decimal{Coef: q, Exp: exp}.Decimal128(), nil
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func mod(a []any) (any, error) {
	l, r := a[0], a[1]
	if isNumber(l) && isNumber(r) {
		if width(l) == wDecimal || width(r) == wDecimal {
			x, y := update.ToDecimal(l), update.ToDecimal(r)
			if y.Inf == 0 && !y.NaN && y.Coef.Sign() == 0 {
				return nil, mongoerr.New(mongoerr.Location5733415, "can't $mod by zero")
			}
			if x.NaN || y.NaN || x.Inf != 0 {
				return update.Decimal{NaN: true}.Decimal128(), nil
			}
			if y.Inf != 0 {
				return x.Decimal128(), nil
			}
			e := min(x.Exp, y.Exp)
			xi := new(big.Int).Mul(x.Coef, pow10(x.Exp-e))
			yi := new(big.Int).Mul(y.Coef, pow10(y.Exp-e))
			return update.Decimal{Coef: new(big.Int).Rem(xi, yi), Exp: e}.Decimal128(), nil
		}
		den := toFloat(r)
		if den == 0 {
			return nil, mongoerr.New(mongoerr.Location16610, "can't $mod by zero")
		}
		_, rIntegral := int64Of(r)
		if width(l) == wDouble || (width(r) == wDouble && !rIntegral) {
			return math.Mod(toFloat(l), den), nil
		}
		x, y := toLong(l), toLong(r)
		res := int64(0)
		if y != -1 {
			res = x % y
		}
		if width(l) == wLong || width(r) == wLong {
			return res, nil
		}
		return int32(res), nil
	}
	if nullish(l) || nullish(r) {
		return nil, nil
	}
	return nil, mongoerr.Newf(mongoerr.Location16611, "$mod only supports numeric types, not %s and %s", TypeName(l), TypeName(r))
}

// unaryNumeric is an operator of one numeric argument: null for null or
// missing, an error for anything else that is not a number.
func unaryNumeric(fn func(any) (any, error)) parser {
	return naryNamed(1, 1, func(name string, a []any) (any, error) {
		v := a[0]
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(mongoerr.Location28765, "%s only supports numeric types, not %s", name, TypeName(v))
		}
		return fn(v)
	})
}

func absNum(v any) (any, error) {
	switch x := v.(type) {
	case int32:
		return intOrLong(int64(math.Abs(float64(x)))), nil
	case int64:
		if x == math.MinInt64 {
			return nil, mongoerr.New(mongoerr.Location28680, "can't take $abs of long long min")
		}
		if x < 0 {
			x = -x
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	d := update.ToDecimal(v)
	if d.Coef != nil {
		d.Coef = new(big.Int).Abs(d.Coef)
	}
	if d.Inf != 0 {
		d.Inf = 1
	}
	return d.Decimal128(), nil
}

func sqrtNum(v any) (any, error) {
	if d, ok := v.(bson.Decimal128); ok {
		x := update.ToDecimal(d)
		if x.NaN || x.Inf > 0 {
			return d, nil
		}
		if x.Inf < 0 || x.Coef.Sign() < 0 {
			return nil, mongoerr.New(mongoerr.Location28714, "$sqrt's argument must be greater than or equal to 0")
		}
		f, _, err := big.ParseFloat(d.String(), 10, 256, big.ToNearestEven)
		if err != nil {
			return nil, mongoerr.Newf(mongoerr.InternalError, "$sqrt of %s", d)
		}
		return floatToDecimal(new(big.Float).Sqrt(f)), nil
	}
	f := toFloat(v)
	if f < 0 {
		return nil, mongoerr.New(mongoerr.Location28714, "$sqrt's argument must be greater than or equal to 0")
	}
	return math.Sqrt(f), nil
}

// floatToDecimal rounds a high-precision float to a Decimal128.
func floatToDecimal(f *big.Float) bson.Decimal128 {
	mant, exp, _ := strings.Cut(f.Text('e', 40), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	coef, _ := new(big.Int).SetString(digits, 10)
	return update.Decimal{Coef: coef, Exp: e - (len(strings.TrimPrefix(digits, "-")) - 1)}.Decimal128()
}

// floatFn computes fn in double precision. Decimal128 arguments are
// refused: tierdb has no decimal transcendental functions, and computing
// them in double precision would return fewer digits than MongoDB does.
func floatFn(name string, fn func(float64) float64, check func(float64) error) func(any) (any, error) {
	return func(v any) (any, error) {
		if _, ok := v.(bson.Decimal128); ok {
			return nil, mongoerr.Newf(mongoerr.NotImplemented, "%s of a Decimal128 is not supported by tierdb", name)
		}
		f := toFloat(v)
		if check != nil {
			if err := check(f); err != nil {
				return nil, err
			}
		}
		return fn(f), nil
	}
}

func positive(code mongoerr.Code, msg string) func(float64) error {
	return func(f float64) error {
		if f > 0 || math.IsNaN(f) {
			return nil
		}
		return mongoerr.Newf(code, msg, f)
	}
}

func logNum(a []any) (any, error) {
	x, base := a[0], a[1]
	if nullish(x) || nullish(base) {
		return nil, nil
	}
	if !isNumber(x) {
		return nil, mongoerr.Newf(mongoerr.Location28756, "$log's argument must be numeric, not %s", TypeName(x))
	}
	if !isNumber(base) {
		return nil, mongoerr.Newf(mongoerr.Location28757, "$log's base must be numeric, not %s", TypeName(base))
	}
	if width(x) == wDecimal || width(base) == wDecimal {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$log of a Decimal128 is not supported by tierdb")
	}
	xf, bf := toFloat(x), toFloat(base)
	if !(xf > 0 || math.IsNaN(xf)) {
		return nil, mongoerr.Newf(mongoerr.Location28758, "$log's argument must be a positive number, but is %v", xf)
	}
	if !((bf > 0 && bf != 1) || math.IsNaN(bf)) {
		return nil, mongoerr.Newf(mongoerr.Location28759, "$log's base must be a positive number not equal to 1, but is %v", bf)
	}
	return math.Log(xf) / math.Log(bf), nil
}

func pow(a []any) (any, error) {
	b, e := a[0], a[1]
	if nullish(b) || nullish(e) {
		return nil, nil
	}
	if !isNumber(b) {
		return nil, mongoerr.Newf(mongoerr.Location28762, "$pow's base must be numeric, not %s", TypeName(b))
	}
	if !isNumber(e) {
		return nil, mongoerr.Newf(mongoerr.Location28763, "$pow's exponent must be numeric, not %s", TypeName(e))
	}
	zeroNeg := mongoerr.New(mongoerr.Location28764, "$pow cannot take a base of 0 and a negative exponent")
	if width(b) == wDecimal || width(e) == wDecimal {
		n, ok := int64Of(e)
		if !ok || n < 0 || n > 1000 {
			return nil, mongoerr.New(mongoerr.NotImplemented, "$pow of a Decimal128 is supported by tierdb for whole exponents from 0 to 1000 only")
		}
		var r any = int32(1)
		for range n {
			r = update.DecimalMul(r, b)
		}
		return update.DecimalAdd(r, int32(0)), nil
	}
	bf, ef := toFloat(b), toFloat(e)
	if bf == 0 && ef < 0 {
		return nil, zeroNeg
	}
	if width(b) == wDouble || width(e) == wDouble {
		return math.Pow(bf, ef), nil
	}
	bl, el := toLong(b), toLong(e)
	long := width(b) == wLong || width(e) == wLong
	result := func(n int64) any {
		if long {
			return n
		}
		return intOrLong(n)
	}
	switch {
	case bl == 0:
		if el == 0 {
			return result(1), nil
		}
		return result(0), nil
	case bl == 1:
		return result(1), nil
	case bl == -1:
		if el%2 == 0 {
			return result(1), nil
		}
		return result(-1), nil
	case el < 0 || el > 63:
		return math.Pow(float64(bl), float64(el)), nil
	}
	r := big.NewInt(1)
	r.Exp(big.NewInt(bl), big.NewInt(el), nil)
	if !r.IsInt64() {
		return math.Pow(float64(bl), float64(el)), nil
	}
	return result(r.Int64()), nil
}

type roundMode int

const (
	halfEven roundMode = iota
	towardZero
	ceilMode
	floorMode
)

func roundOp(name string, a []any, mode roundMode) (any, error) {
	v := a[0]
	if nullish(v) {
		return nil, nil
	}
	if !isNumber(v) {
		return nil, mongoerr.Newf(mongoerr.Location51081, "%s only supports numeric types, not %s", name, TypeName(v))
	}
	places := int64(0)
	if len(a) > 1 {
		p := a[1]
		if nullish(p) {
			return nil, nil
		}
		n, ok := int64Of(p)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location51082, "precision argument to  %s must be a integral value", name)
		}
		if n < -20 || n > 100 {
			return nil, mongoerr.Newf(mongoerr.Location51083, "cannot apply %s with precision value %d value must be in [-20, 100]", name, n)
		}
		places = n
	}
	return roundTo(v, int(places), mode), nil
}

// roundTo rounds a number to places decimal places (negative: to tens,
// hundreds, ...), keeping its type; integers with places >= 0 are
// unchanged, and a rounded int32 that no longer fits becomes an int64.
func roundTo(v any, places int, mode roundMode) any {
	switch x := v.(type) {
	case int32, int64:
		if places >= 0 {
			return v
		}
		c := quantize(big.NewInt(toLong(x)), 0, places, mode)
		c.Mul(c, pow10(-places))
		if _, is32 := v.(int32); is32 {
			return intOrLong(c.Int64())
		}
		return c.Int64()
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return x
		}
		if mode == ceilMode {
			return math.Ceil(x)
		}
		if mode == floorMode {
			return math.Floor(x)
		}
		// As MongoDB: through a 34-digit decimal.
		d, _ := bson.ParseDecimal128(strconv.FormatFloat(x, 'e', 33, 64))
		coef, exp, _ := d.BigInt()
		c := quantize(coef, exp, places, mode)
		f, _ := strconv.ParseFloat(c.String()+"e"+strconv.Itoa(-places), 64)
		if f == 0 && math.Signbit(x) {
			f = math.Copysign(0, -1)
		}
		return f
	}
	d := update.ToDecimal(v)
	if d.NaN || d.Inf != 0 {
		return v
	}
	return update.Decimal{Coef: quantize(d.Coef, d.Exp, places, mode), Exp: -places}.Decimal128()
}

// quantize returns coef×10^exp as a coefficient of 10^-places, rounded
// by mode.
func quantize(coef *big.Int, exp, places int, mode roundMode) *big.Int {
	target := -places
	if exp >= target {
		return new(big.Int).Mul(coef, pow10(exp-target))
	}
	div := pow10(target - exp)
	q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
	if r.Sign() == 0 {
		return q
	}
	up := false // away from zero
	switch mode {
	case halfEven:
		twice := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
		c := twice.Cmp(div)
		up = c > 0 || (c == 0 && q.Bit(0) == 1)
	case ceilMode:
		up = coef.Sign() > 0
	case floorMode:
		up = coef.Sign() < 0
	}
	if up {
		if coef.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// accumulatorOp is $sum, $avg, $min, $max, $stdDevPop and $stdDevSamp used
// as expressions: over the elements of a single array argument, or over
// the arguments themselves.
func accumulatorOp(fn func(vals []any) any) parser {
	return nary(0, -1, func(args []any) (any, error) {
		vals := args
		if len(args) == 1 {
			if arr, ok := args[0].(bson.A); ok {
				vals = arr
			}
		}
		return fn(vals), nil
	})
}

// extreme is the least (sign -1) or greatest value in BSON order, null,
// undefined and missing ignored; null when none is left.
func extreme(vals []any, sign int) any {
	var best any
	found := false
	for _, v := range vals {
		if nullish(v) {
			continue
		}
		if !found || Compare(v, best)*sign > 0 {
			best, found = v, true
		}
	}
	return best
}

// StdDev is $stdDevPop (pop) or $stdDevSamp over the numbers (Welford's
// method), non-numbers ignored; too few numbers give null.
type StdDev struct {
	n, mean, m2 float64
}

// Add adds v if it is a number.
func (s *StdDev) Add(v any) {
	if !isNumber(v) {
		return
	}
	x := toFloat(v)
	s.n++
	d := x - s.mean
	s.mean += d / s.n
	s.m2 += d * (x - s.mean)
}

// Value is the population (pop) or sample standard deviation.
func (s *StdDev) Value(pop bool) any {
	switch {
	case pop && s.n > 0:
		return math.Sqrt(s.m2 / s.n)
	case !pop && s.n > 1:
		return math.Sqrt(s.m2 / (s.n - 1))
	}
	return nil
}

func stdDev(vals []any, pop bool) any {
	var s StdDev
	for _, v := range vals {
		s.Add(v)
	}
	return s.Value(pop)
}
