package query

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// The bitwise query operators $bitsAllSet, $bitsAnySet, $bitsAllClear and
// $bitsAnyClear. The operand names bit positions (0 is the least
// significant bit) as a non-negative integer mask, a BinData mask (byte 0
// holds positions 0-7) or an array of positions. They match numbers that
// are whole and fit an int64, in two's complement with the sign extended
// past bit 63 (so bit 200 is set in -5 and clear in 5), and BinData, whose
// bits past its end are clear. Anything else, NaN or a fractional number
// never matches. They are evaluated in tierdb only (never pushed to SQL).

type bitsKind int

const (
	bitsAllSet bitsKind = iota
	bitsAnySet
	bitsAllClear
	bitsAnyClear
)

var bitsOps = map[string]bitsKind{
	"$bitsAllSet": bitsAllSet, "$bitsAnySet": bitsAnySet,
	"$bitsAllClear": bitsAllClear, "$bitsAnyClear": bitsAnyClear,
}

type bitsPred struct {
	kind      bitsKind
	positions []int // sorted, distinct
	// mask is a BinData operand, kept as it came (its positions would
	// take 64 times its size): it names the positions instead.
	mask []byte
}

// maxBitPosition is the largest position MongoDB accepts (an int).
const maxBitPosition = math.MaxInt32

func parseBits(path, op string, arg any) (bitsPred, error) {
	p := bitsPred{kind: bitsOps[op]}
	switch x := arg.(type) {
	case bson.A:
		for i, v := range x {
			n, err := bitPosition(i, normalize(v))
			if err != nil {
				return p, err
			}
			p.positions = append(p.positions, n)
		}
		sort.Ints(p.positions)
		p.positions = dedupInts(p.positions)
	case bson.Binary:
		p.mask = x.Data
	case int32, int64, float64, bson.Decimal128:
		m, err := bitMask(op, x)
		if err != nil {
			return p, err
		}
		for m != 0 {
			j := bits.TrailingZeros64(m)
			p.positions = append(p.positions, j)
			m &^= 1 << j
		}
	default:
		return p, badValue("%s takes an Array, a number, or a BinData but received: %s: %s", path, op, formatOperand(arg))
	}
	return p, nil
}

func dedupInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func failedToParse(format string, args ...any) error {
	return mongoerr.Newf(mongoerr.FailedToParse, format, args...)
}

func formatOperand(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return "null"
	case float64:
		return formatDouble(x)
	case bson.Decimal128:
		return x.String()
	}
	return fmt.Sprint(v)
}

func formatDouble(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprint(f)
}

// wholeNonNegative reads a mask or position: a whole number within int64.
func wholeNonNegative(v any, describe func(string) string) (int64, error) {
	if f, ok := v.(float64); ok {
		switch {
		case math.IsNaN(f):
			return 0, failedToParse("%s", describe("Expected an integer, but found NaN in"))
		case f >= twoTo63 || f < -twoTo63:
			return 0, failedToParse("%s", describe("Cannot represent as a 64-bit integer"))
		case f != math.Trunc(f):
			return 0, failedToParse("%s", describe("Expected an integer"))
		}
	}
	n, ok := truncToInt64(v)
	if !ok {
		return 0, failedToParse("%s", describe("Cannot represent as a 64-bit integer"))
	}
	if Compare(v, n) != 0 {
		return 0, failedToParse("%s", describe("Expected an integer"))
	}
	if n < 0 {
		return 0, failedToParse("%s", describe("Expected a non-negative number in"))
	}
	return n, nil
}

func bitMask(op string, v any) (uint64, error) {
	n, err := wholeNonNegative(v, func(what string) string {
		return fmt.Sprintf("%s: %s: %s", what, op, formatOperand(v))
	})
	return uint64(n), err
}

func bitPosition(i int, v any) (int, error) {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128:
	default:
		return 0, badValue("Failed to parse bit position. Expected a number in: %d: %s", i, formatOperand(v))
	}
	n, err := wholeNonNegative(v, func(what string) string {
		return fmt.Sprintf("Failed to parse bit position. %s: %d: %s", what, i, formatOperand(v))
	})
	if err != nil {
		return 0, err
	}
	if n > maxBitPosition {
		return 0, failedToParse("Failed to parse bit position. Cannot represent %d: %s in an int", i, formatOperand(v))
	}
	return int(n), nil
}

func (p bitsPred) match(v any, missing bool) bool {
	if missing {
		return false
	}
	switch x := normalize(v).(type) {
	case bson.Binary:
		return p.test(func(pos int) bool {
			return pos < len(x.Data)*8 && x.Data[pos/8]&(1<<(pos%8)) != 0
		})
	case int32, int64, float64, bson.Decimal128:
		n, ok := truncToInt64(x)
		if !ok || isNaNValue(x) || Compare(x, n) != 0 {
			return false
		}
		return p.test(func(pos int) bool {
			if pos >= 64 {
				return n < 0
			}
			return uint64(n)&(1<<pos) != 0
		})
	}
	return false
}

func (p bitsPred) test(isSet func(int) bool) bool {
	// decided reports whether the bit at pos settles the result, which
	// is then the opposite of the answer with no position left.
	decided := func(pos int) bool {
		set := isSet(pos)
		switch p.kind {
		case bitsAllSet, bitsAnyClear:
			return !set
		default:
			return set
		}
	}
	vacuous := p.kind == bitsAllSet || p.kind == bitsAllClear
	for _, pos := range p.positions {
		if decided(pos) {
			return !vacuous
		}
	}
	for i, b := range p.mask {
		for b != 0 {
			j := bits.TrailingZeros8(b)
			if decided(i*8 + j) {
				return !vacuous
			}
			b &^= 1 << j
		}
	}
	return vacuous
}
