package update

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Arithmetic for $inc and $mul follows MongoDB's type promotion:
//
//   - any decimal operand: the result is decimal (a double operand is first
//     rounded to 15 significant digits, as MongoDB converts it);
//   - otherwise any double operand: the result is double;
//   - int32 with int32: int32, or int64 when the result does not fit;
//   - otherwise (int64 involved): int64. Overflowing int64 is an error,
//     not a silent promotion to double: MongoDB fails such an update with
//     "Failed to apply $inc operations to current value".

func isNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128:
		return true
	}
	return false
}

// zeroLike is the zero of v's numeric type.
func zeroLike(v any) any {
	switch v.(type) {
	case int32:
		return int32(0)
	case int64:
		return int64(0)
	case float64:
		return float64(0)
	default:
		d, _ := bson.ParseDecimal128("0")
		return d
	}
}

// arith computes a+b (mul false) or a*b (mul true) for numeric a and b.
// ok is false when an int64 result overflows.
func arith(a, b any, mul bool) (any, bool) {
	_, ad := a.(bson.Decimal128)
	_, bd := b.(bson.Decimal128)
	if ad || bd {
		return decArith(toDec(a), toDec(b), mul).decimal128(), true
	}
	_, af := a.(float64)
	_, bf := b.(float64)
	if af || bf {
		if mul {
			return toFloat(a) * toFloat(b), true
		}
		return toFloat(a) + toFloat(b), true
	}
	x, y := toInt64(a), toInt64(b)
	ai, aIs32 := a.(int32)
	bi, bIs32 := b.(int32)
	if aIs32 && bIs32 {
		// Two int32 values never overflow int64.
		r := int64(ai) + int64(bi)
		if mul {
			r = int64(ai) * int64(bi)
		}
		if r >= math.MinInt32 && r <= math.MaxInt32 {
			return int32(r), true
		}
		return r, true
	}
	if mul {
		if x == 0 || y == 0 {
			return int64(0), true
		}
		r := x * y
		if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
			return nil, false
		}
		return r, true
	}
	r := x + y
	if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
		return nil, false
	}
	return r, true
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// numberDebug renders a number as MongoDB's SafeNum does in messages.
func numberDebug(v any) string {
	switch x := v.(type) {
	case int32:
		return "(NumberInt)" + strconv.FormatInt(int64(x), 10)
	case int64:
		return "(NumberLong)" + strconv.FormatInt(x, 10)
	case float64:
		return "(NumberDouble)" + formatDouble(x)
	case bson.Decimal128:
		return "(NumberDecimal)" + x.String()
	}
	return formatValue(v)
}

// dec is an IEEE 754-2008 decimal value in a form big.Int can compute
// with: coef × 10^exp, or a special value.
type dec struct {
	coef *big.Int
	exp  int
	nan  bool
	inf  int // +1 or -1 for infinities
}

const decDigits = 34

func toDec(v any) dec {
	switch x := v.(type) {
	case int32:
		return dec{coef: big.NewInt(int64(x))}
	case int64:
		return dec{coef: big.NewInt(x)}
	case float64:
		switch {
		case math.IsNaN(x):
			return dec{nan: true}
		case math.IsInf(x, 1):
			return dec{inf: 1}
		case math.IsInf(x, -1):
			return dec{inf: -1}
		}
		d, err := bson.ParseDecimal128(strconv.FormatFloat(x, 'e', 14, 64))
		if err != nil {
			return dec{nan: true}
		}
		return toDec(d)
	case bson.Decimal128:
		if x.IsNaN() {
			return dec{nan: true}
		}
		if s := x.IsInf(); s != 0 {
			return dec{inf: s}
		}
		coef, exp, err := x.BigInt()
		if err != nil {
			return dec{nan: true}
		}
		return dec{coef: coef, exp: exp}
	}
	return dec{nan: true}
}

func decArith(a, b dec, mul bool) dec {
	switch {
	case a.nan || b.nan:
		return dec{nan: true}
	case mul && (a.inf != 0 || b.inf != 0):
		sa, sb := a.sign(), b.sign()
		if sa == 0 || sb == 0 {
			return dec{nan: true}
		}
		return dec{inf: sa * sb}
	case a.inf != 0 && b.inf != 0:
		if a.inf != b.inf {
			return dec{nan: true}
		}
		return a
	case a.inf != 0:
		return a
	case b.inf != 0:
		return b
	}
	if mul {
		return dec{coef: new(big.Int).Mul(a.coef, b.coef), exp: a.exp + b.exp}
	}
	e := min(a.exp, b.exp)
	x := new(big.Int).Mul(a.coef, pow10(a.exp-e))
	y := new(big.Int).Mul(b.coef, pow10(b.exp-e))
	return dec{coef: x.Add(x, y), exp: e}
}

func (d dec) sign() int {
	if d.inf != 0 {
		return d.inf
	}
	return d.coef.Sign()
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// decimal128 rounds d to 34 significant digits (half to even) and encodes
// it; results beyond the exponent range become infinities.
func (d dec) decimal128() bson.Decimal128 {
	special := func(s string) bson.Decimal128 {
		v, _ := bson.ParseDecimal128(s)
		return v
	}
	switch {
	case d.nan:
		return special("NaN")
	case d.inf > 0:
		return special("Infinity")
	case d.inf < 0:
		return special("-Infinity")
	}
	coef, exp := new(big.Int).Set(d.coef), d.exp
	if n := len(new(big.Int).Abs(coef).String()) - decDigits; n > 0 {
		coef, exp = roundDigits(coef, n), exp+n
		if len(new(big.Int).Abs(coef).String()) > decDigits {
			coef, exp = roundDigits(coef, 1), exp+1
		}
	}
	if exp < bson.MinDecimal128Exp {
		coef, exp = roundDigits(coef, bson.MinDecimal128Exp-exp), bson.MinDecimal128Exp
	}
	v, ok := bson.ParseDecimal128FromBigInt(coef, exp)
	if !ok {
		if coef.Sign() < 0 {
			return special("-Infinity")
		}
		return special("Infinity")
	}
	return v
}

// roundDigits drops the last n decimal digits of c, rounding half to even.
func roundDigits(c *big.Int, n int) *big.Int {
	div := pow10(n)
	q, r := new(big.Int).QuoRem(c, div, new(big.Int))
	twice := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
	if cmp := twice.Cmp(div); cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		if c.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// DecimalSum adds numbers of any type exactly, as decimals: what $sum and
// $avg compute once one of their inputs is a Decimal128 (doubles are taken
// at 15 significant digits, as MongoDB converts them). The zero value is 0.
type DecimalSum struct {
	d   dec
	set bool
}

// Add adds the number v.
func (s *DecimalSum) Add(v any) {
	if !s.set {
		s.d, s.set = dec{coef: new(big.Int)}, true
	}
	s.d = decArith(s.d, toDec(v), false)
}

// Value is the sum, rounded to 34 significant digits.
func (s *DecimalSum) Value() bson.Decimal128 {
	if !s.set {
		return dec{coef: new(big.Int)}.decimal128()
	}
	return s.d.decimal128()
}

// Mean is the sum divided by n (> 0), rounded to 34 significant digits.
func (s *DecimalSum) Mean(n int64) bson.Decimal128 {
	d := s.d
	if !s.set {
		d = dec{coef: new(big.Int)}
	}
	if d.nan || d.inf != 0 {
		return d.decimal128()
	}
	// Forty digits beyond the 34 kept: the quotient's truncation cannot
	// move the rounding.
	const extra = decDigits + 40
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(d.coef, pow10(extra)), big.NewInt(n), new(big.Int))
	exp := d.exp - extra
	if r.Sign() == 0 {
		// Exact: IEEE 754's preferred exponent, the sum's own, or the
		// least below it that holds the quotient (3.5/2 is 1.75, not
		// 1.750000…).
		ten, m := big.NewInt(10), new(big.Int)
		for exp < d.exp {
			if m.Rem(q, ten).Sign() != 0 {
				break
			}
			q.Quo(q, ten)
			exp++
		}
	}
	return dec{coef: q, exp: exp}.decimal128()
}
