package bsonx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// value appends v, which is not a container elements encodes itself, and
// returns it with v's BSON type byte. Types it does not know go to the
// driver.
func value(b []byte, v any) ([]byte, byte, error) {
	switch v := v.(type) {
	case nil:
		return b, byte(bson.TypeNull), nil
	case string:
		return appendString(b, v), byte(bson.TypeString), nil
	case int32:
		return binary.LittleEndian.AppendUint32(b, uint32(v)), byte(bson.TypeInt32), nil
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v)), byte(bson.TypeInt64), nil
	case float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v)), byte(bson.TypeDouble), nil
	case bool:
		if v {
			return append(b, 1), byte(bson.TypeBoolean), nil
		}
		return append(b, 0), byte(bson.TypeBoolean), nil
	case bson.Raw:
		b, err := appendRaw(b, v)
		return b, byte(bson.TypeEmbeddedDocument), err
	case bson.ObjectID:
		return append(b, v[:]...), byte(bson.TypeObjectID), nil
	case bson.DateTime:
		return binary.LittleEndian.AppendUint64(b, uint64(v)), byte(bson.TypeDateTime), nil
	case bson.Binary:
		return appendBinary(b, v.Subtype, v.Data), byte(bson.TypeBinary), nil
	case int:
		// The driver's default: the smaller of int32 and int64 that fits.
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return binary.LittleEndian.AppendUint32(b, uint32(v)), byte(bson.TypeInt32), nil
		}
		return binary.LittleEndian.AppendUint64(b, uint64(v)), byte(bson.TypeInt64), nil
	case bson.Timestamp:
		// The increment comes first on the wire.
		b = binary.LittleEndian.AppendUint32(b, v.I)
		return binary.LittleEndian.AppendUint32(b, v.T), byte(bson.TypeTimestamp), nil
	case bson.Decimal128:
		hi, lo := v.GetBytes()
		b = binary.LittleEndian.AppendUint64(b, lo)
		return binary.LittleEndian.AppendUint64(b, hi), byte(bson.TypeDecimal128), nil
	case bson.Regex:
		b, err := appendRegex(b, v)
		return b, byte(bson.TypeRegex), err
	case bson.MinKey:
		return b, byte(bson.TypeMinKey), nil
	case bson.MaxKey:
		return b, byte(bson.TypeMaxKey), nil
	case bson.Undefined:
		return b, byte(bson.TypeUndefined), nil
	case bson.Null:
		return b, byte(bson.TypeNull), nil
	case bson.JavaScript:
		return appendString(b, string(v)), byte(bson.TypeJavaScript), nil
	case bson.Symbol:
		return appendString(b, string(v)), byte(bson.TypeSymbol), nil
	case bson.DBPointer:
		b = appendString(b, v.DB)
		return append(b, v.Pointer[:]...), byte(bson.TypeDBPointer), nil
	case bson.CodeWithScope:
		// elements encodes those with a bson.D scope.
		if scope, ok := v.Scope.(bson.Raw); ok {
			start := len(b)
			b = appendString(append(b, 0, 0, 0, 0), string(v.Code))
			b, err := appendRaw(b, scope)
			if err != nil {
				return nil, 0, err
			}
			binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start))
			return b, byte(bson.TypeCodeWithScope), nil
		}
	case []byte:
		if v == nil {
			return b, byte(bson.TypeNull), nil
		}
		return appendBinary(b, bson.TypeBinaryGeneric, v), byte(bson.TypeBinary), nil
	case time.Time:
		return binary.LittleEndian.AppendUint64(b, uint64(bson.NewDateTimeFromTime(v))), byte(bson.TypeDateTime), nil
	}
	return appendByDriver(b, v)
}

// appendString appends a length-prefixed, NUL-terminated string. Like the
// driver, it neither checks UTF-8 nor rejects NUL bytes inside s, and lets
// a length past int32 wrap: the document size check rejects such a
// document anyway.
func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)+1))
	b = append(b, s...)
	return append(b, 0)
}

// appendBinary appends a binary value. Subtype 2 ("old binary") repeats the
// payload length inside the payload, as the driver writes it.
func appendBinary(b []byte, subtype byte, data []byte) []byte {
	if subtype == bson.TypeBinaryBinaryOld {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(data)+4))
		b = append(b, subtype)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, subtype)
	return append(b, data...)
}

// appendRegex appends a regular expression with its options sorted, which
// is what the driver writes.
func appendRegex(b []byte, r bson.Regex) ([]byte, error) {
	if strings.IndexByte(r.Pattern, 0) >= 0 || strings.IndexByte(r.Options, 0) >= 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON regex values cannot contain null bytes")
	}
	b = append(b, r.Pattern...)
	b = append(b, 0)
	b = appendSortedOptions(b, r.Options)
	return append(b, 0), nil
}

// appendSortedOptions appends the runes of opts in ascending order. The
// driver sorts runes, so each invalid UTF-8 byte becomes U+FFFD; for ASCII,
// the usual case, sorting bytes is the same and needs no allocation.
func appendSortedOptions(b []byte, opts string) []byte {
	sorted := true
	for i := 0; i < len(opts); i++ {
		if opts[i] >= utf8.RuneSelf {
			r := []rune(opts)
			slices.Sort(r)
			return append(b, string(r)...)
		}
		if i > 0 && opts[i] < opts[i-1] {
			sorted = false
		}
	}
	start := len(b)
	b = append(b, opts...)
	if !sorted {
		slices.Sort(b[start:])
	}
	return b
}

// appendByDriver encodes v with the driver, as the only element of a
// document with an empty key, and appends the value's bytes. Going through
// bson.Marshal of a bson.D, rather than bson.MarshalValue, takes exactly
// the code path the driver takes for v inside a document.
func appendByDriver(b []byte, v any) ([]byte, byte, error) {
	doc, err := bson.Marshal(bson.D{{Key: "", Value: v}})
	if err != nil {
		return nil, 0, &mongoerr.Error{Code: mongoerr.InternalError, Msg: fmt.Sprintf("cannot encode a value of type %T", v), Cause: err}
	}
	// doc is a length prefix, the type byte, the empty key's 0x00, the
	// value, and the terminating 0x00.
	return append(b, doc[6:len(doc)-1]...), doc[4], nil
}
