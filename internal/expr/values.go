package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

type missingType struct{}

// Missing is the value of a field that does not exist. It is not null:
// {$eq: ["$nothere", null]} is false, $type says "missing", and a
// document expression leaves the field out.
var Missing any = missingType{}

// IsMissing reports whether v is Missing.
func IsMissing(v any) bool {
	_, ok := v.(missingType)
	return ok
}

// nullish: null, undefined or missing, which most operators answer with
// null.
func nullish(v any) bool {
	switch v.(type) {
	case nil, missingType, bson.Undefined:
		return true
	}
	return false
}

// Truthy is MongoDB's coercion to bool: false for false, null, undefined,
// missing and numeric zero; true for everything else.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil, missingType, bson.Undefined:
		return false
	case bool:
		return x
	case int32:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	case bson.Decimal128:
		return !isDecimalZero(x)
	}
	return true
}

func isDecimalZero(d bson.Decimal128) bool {
	if d.IsNaN() || d.IsInf() != 0 {
		return false
	}
	c, _, err := d.BigInt()
	return err == nil && c.Sign() == 0
}

// TypeName is $type's answer: MongoDB's type name, "missing" for Missing.
func TypeName(v any) string {
	if IsMissing(v) {
		return "missing"
	}
	return query.TypeName(v)
}

// Compare orders values as MongoDB's aggregation does: the BSON order of
// query.Compare, with Missing below everything.
func Compare(a, b any) int {
	am, bm := IsMissing(a), IsMissing(b)
	switch {
	case am && bm:
		return 0
	case am:
		return -1
	case bm:
		return 1
	}
	return query.Compare(a, b)
}

// IsNumber reports whether v is of one of the four numeric BSON types.
func IsNumber(v any) bool { return isNumber(v) }

func isNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128:
		return true
	}
	return false
}

// toFloat is a number as a double (decimals rounded to the nearest).
func toFloat(v any) float64 {
	switch x := v.(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case bson.Decimal128:
		switch {
		case x.IsNaN():
			return math.NaN()
		case x.IsInf() > 0:
			return math.Inf(1)
		case x.IsInf() < 0:
			return math.Inf(-1)
		}
		f, _ := strconv.ParseFloat(x.String(), 64)
		return f
	}
	return 0
}

// toLong is a number truncated to an int64 (as coerceToLong).
func toLong(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	}
	f := toFloat(v)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= 9.223372036854775807e18:
		return math.MaxInt64
	case f <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

// int32Of reports whether v is a number with an exact int32 value (what
// MongoDB calls integral), and that value.
func int32Of(v any) (int, bool) {
	n, ok := int64Of(v)
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// int64Of reports whether v is a number with an exact int64 value.
func int64Of(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64, bson.Decimal128:
		f := toFloat(x)
		if f != math.Trunc(f) || math.IsInf(f, 0) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// intOrLong is n as an int32 when it fits, else an int64.
func intOrLong(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

// coerceToString is MongoDB's conversion of a value to a string, used by
// $toLower, $substr and $strcasecmp: null and missing give "".
func coerceToString(v any) (string, error) {
	switch x := v.(type) {
	case nil, missingType, bson.Undefined:
		return "", nil
	case string:
		return x, nil
	case bson.Symbol:
		return string(x), nil
	case int32, int64, float64, bson.Decimal128:
		return numberString(x), nil
	case bson.DateTime:
		return formatISO(x), nil
	case bson.Timestamp:
		return "Timestamp(" + strconv.FormatUint(uint64(x.T), 10) + ", " + strconv.FormatUint(uint64(x.I), 10) + ")", nil
	}
	return "", mongoerr.Newf(mongoerr.Location16007, "can't convert from BSON type %s to String", TypeName(v))
}

func numberString(v any) string {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		case math.IsNaN(x):
			return "NaN"
		case x == 0 && math.Signbit(x):
			return "-0"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bson.Decimal128:
		return x.String()
	}
	return ""
}

// formatDoc renders d for error messages.
func formatDoc(d bson.D) string {
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		return "{...}"
	}
	return string(b)
}

// FormatValue renders v for error messages (relaxed extended JSON).
func FormatValue(v any) string {
	if IsMissing(v) {
		return "missing"
	}
	s, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil {
		return TypeName(v)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(s), `{"v":`), "}")
}

// Now is $$NOW for an evaluation starting now.
func Now() bson.DateTime { return bson.NewDateTimeFromTime(time.Now()) }
