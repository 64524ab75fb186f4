package update

import (
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Decimal is a number as IEEE 754-2008 decimal arithmetic sees it:
// Coef × 10^Exp, or NaN, or an infinity (Inf is +1 or -1). The expression
// language computes with it where a Decimal128 is involved.
type Decimal struct {
	Coef *big.Int
	Exp  int
	NaN  bool
	Inf  int
}

// ToDecimal converts a number of any BSON numeric type as MongoDB's
// coerceToDecimal does: doubles are taken at 15 significant digits.
func ToDecimal(v any) Decimal {
	d := toDec(v)
	return Decimal{Coef: d.coef, Exp: d.exp, NaN: d.nan, Inf: d.inf}
}

// Decimal128 rounds d to 34 significant digits (half to even).
func (d Decimal) Decimal128() bson.Decimal128 {
	return dec{coef: d.Coef, exp: d.Exp, nan: d.NaN, inf: d.Inf}.decimal128()
}

// DecimalAdd is a+b on numbers, exactly, then rounded to a Decimal128.
func DecimalAdd(a, b any) bson.Decimal128 { return decArith(toDec(a), toDec(b), false).decimal128() }

// DecimalMul is a×b on numbers, exactly, then rounded to a Decimal128.
func DecimalMul(a, b any) bson.Decimal128 { return decArith(toDec(a), toDec(b), true).decimal128() }
