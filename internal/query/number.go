package query

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Numbers of all four BSON types compare by exact mathematical value, so the
// key of a number must be exact too. A number's key body is:
//
//	8 bytes   the largest double <= the value, in an order-preserving form
//	1 byte    0x00 when the value is exactly that double, else 0x01
//	...       for inexact values only: the exact value as a decimal
//	          (2-byte exponent, one byte per digit, 0x00 end), every byte
//	          complemented when the value is negative
//
// Every value sharing the 8-byte prefix lies in [d, next double above d),
// has one sign and is above d unless it is d, which is what makes the
// tiebreak order right. Common values (all doubles, all int32, int64 up to
// 2^53) cost 9 bytes; int64 beyond 2^53 and decimals that are not doubles add
// at most 38. NaN, of any type, is eight zero bytes: below -Inf. There is no
// approximate corner: every finite decimal128, huge exponents included,
// encodes its exact value.

const (
	numExact   = 0x00
	numInexact = 0x01
)

// twoTo63 is 2^63 as a double: the first double above every int64.
const twoTo63 = 9223372036854775808.0

// maxDecimalDigits bounds canonical decimal128 significands; longer ones
// are non-canonical encodings that the specification says mean zero.
const maxDecimalDigits = 34

func isNaNValue(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case bson.Decimal128:
		return x.IsNaN()
	}
	return false
}

// compareNumbers orders two normalized numbers exactly. Decimals go through
// their keys, so that Compare and AppendKey cannot disagree on them.
func compareNumbers(a, b any) int {
	_, da := a.(bson.Decimal128)
	_, db := b.(bson.Decimal128)
	if da || db {
		return bytes.Compare(appendNumber(nil, a), appendNumber(nil, b))
	}
	ia, aInt := intValue(a)
	ib, bInt := intValue(b)
	switch {
	case aInt && bInt:
		return cmpInt64(ia, ib)
	case aInt:
		return compareIntFloat(ia, b.(float64))
	case bInt:
		return -compareIntFloat(ib, a.(float64))
	}
	return compareFloats(a.(float64), b.(float64))
}

func intValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareFloats puts NaN below every number and equal to itself.
func compareFloats(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareIntFloat compares without converting i to a double, which would
// round int64 values beyond 2^53.
func compareIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return 1
	case f >= twoTo63:
		return -1
	case f < -twoTo63:
		return 1
	}
	t := math.Trunc(f) // now in [-2^63, 2^63): the conversion is exact
	if c := cmpInt64(i, int64(t)); c != 0 {
		return c
	}
	switch {
	case f > t:
		return -1
	case f < t:
		return 1
	}
	return 0
}

// appendNumber appends the key body of a normalized number.
func appendNumber(dst []byte, v any) []byte {
	switch x := v.(type) {
	case int32:
		return appendFloat(dst, float64(x))
	case int64:
		return appendInt64(dst, x)
	case float64:
		return appendFloat(dst, x)
	case bson.Decimal128:
		return appendDecimal(dst, x)
	}
	return appendNaN(dst)
}

func appendNaN(dst []byte) []byte {
	return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, numExact)
}

func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) {
		return appendNaN(dst)
	}
	if f == 0 {
		f = 0 // -0 and 0 are the same number
	}
	return append(appendOrderedFloat(dst, f), numExact)
}

// appendOrderedFloat writes f so that bytes compare like the doubles: flip
// the sign bit of positives, all bits of negatives.
func appendOrderedFloat(dst []byte, f float64) []byte {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, b)
}

func appendInt64(dst []byte, i int64) []byte {
	f := float64(i) // rounds to nearest
	if f != twoTo63 && int64(f) == i {
		return appendFloat(dst, f)
	}
	if f == twoTo63 || int64(f) > i {
		f = math.Nextafter(f, math.Inf(-1))
	}
	dst = appendOrderedFloat(dst, f)
	mag := uint64(i)
	if i < 0 {
		mag = -mag // two's complement: right for MinInt64 too
	}
	digits := strconv.FormatUint(mag, 10)
	exp := len(digits)
	return appendTiebreak(dst, i < 0, exp, strings.TrimRight(digits, "0"))
}

// appendTiebreak writes the exact decimal 0.digits × 10^exp (digits without
// trailing zeros) after the prefix of an inexact value.
func appendTiebreak(dst []byte, neg bool, exp int, digits string) []byte {
	dst = append(dst, numInexact)
	start := len(dst)
	e := uint16(exp + 0x8000)
	dst = append(dst, byte(e>>8), byte(e))
	for i := 0; i < len(digits); i++ {
		dst = append(dst, digits[i]-'0'+1)
	}
	dst = append(dst, 0)
	if neg {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

func appendDecimal(dst []byte, d bson.Decimal128) []byte {
	if d.IsNaN() {
		return appendNaN(dst)
	}
	if inf := d.IsInf(); inf != 0 {
		return appendFloat(dst, math.Inf(inf))
	}
	sig, exp, err := d.BigInt()
	if err != nil {
		return appendNaN(dst)
	}
	neg := sig.Sign() < 0
	full := new(big.Int).Abs(sig).String()
	if sig.Sign() == 0 || len(full) > maxDecimalDigits {
		return appendFloat(dst, 0)
	}
	digits := strings.TrimRight(full, "0")
	exp += len(full) - len(digits)
	adj := exp + len(digits) // the value is ±0.digits × 10^adj

	var f float64
	switch {
	case adj > 310: // at least 10^310: beyond every finite double
		f = math.MaxFloat64
		if neg {
			f = math.Inf(-1)
		}
	case adj < -330: // below 10^-330: between zero and the smallest subnormal
		f = 0
		if neg {
			f = -math.SmallestNonzeroFloat64
		}
	default:
		r := decimalRat(neg, digits, exp)
		var exact bool
		f, exact = r.Float64()
		if exact {
			return appendFloat(dst, f)
		}
		switch {
		case math.IsInf(f, 1):
			f = math.MaxFloat64
		case math.IsInf(f, -1):
			// -Inf is already below the value.
		case new(big.Rat).SetFloat64(f).Cmp(r) > 0:
			f = math.Nextafter(f, math.Inf(-1))
		}
	}
	dst = appendOrderedFloat(dst, f)
	return appendTiebreak(dst, neg, adj, digits)
}

// decimalRat is ±digits × 10^exp exactly.
func decimalRat(neg bool, digits string, exp int) *big.Rat {
	n, _ := new(big.Int).SetString(digits, 10)
	if neg {
		n.Neg(n)
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	if exp >= 0 {
		return new(big.Rat).SetInt(n.Mul(n, p))
	}
	return new(big.Rat).SetFrac(n, p)
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// truncToInt64 is v rounded toward zero when that fits an int64, for $mod;
// ok is false for non-numbers, NaN, infinities and out-of-range values.
func truncToInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		t := math.Trunc(x)
		if t < -twoTo63 || t >= twoTo63 {
			return 0, false
		}
		return int64(t), true
	case bson.Decimal128:
		if x.IsNaN() || x.IsInf() != 0 {
			return 0, false
		}
		sig, exp, err := x.BigInt()
		if err != nil {
			return 0, false
		}
		if len(new(big.Int).Abs(sig).String()) > maxDecimalDigits {
			return 0, true // non-canonical: zero
		}
		if exp > 19 && sig.Sign() != 0 {
			return 0, false
		}
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp >= 0 {
			sig.Mul(sig, p)
		} else {
			sig.Quo(sig, p) // truncates toward zero
		}
		if !sig.IsInt64() {
			return 0, false
		}
		return sig.Int64(), true
	}
	return 0, false
}

// numberAsFloat is v's nearest double, for arguments such as $size that
// only need to recognise whole numbers.
func numberAsFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case bson.Decimal128:
		// Out-of-range strings parse to ±Inf or 0 with an error; either
		// is fine for telling whole numbers apart.
		f, _ := strconv.ParseFloat(x.String(), 64)
		return f, true
	}
	return 0, false
}

// AsInt reads a whole number of any numeric type (int32, int64, or a
// double with no fraction within int64's range).
func AsInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) || math.IsNaN(n) || math.Abs(n) > 1<<63 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}
