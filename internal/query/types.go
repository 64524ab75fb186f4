package query

import (
	"fmt"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// bracket is MongoDB's canonical type class of a value: values of different
// brackets order by bracket alone, values of one bracket by value. The
// numbers are also the leading byte of a value's key (see AppendKey), so
// their order is the sort order; the gaps leave room for new brackets
// without re-numbering the old ones.
type bracket byte

// Undefined sorts below null, as in MongoDB (canonical types 0 and 5), even
// though an equality match on null also matches undefined.
const (
	brMinKey    bracket = 0x0A
	brUndefined bracket = 0x10
	brNull      bracket = 0x14
	brNumber    bracket = 0x1E
	brString    bracket = 0x28 // strings and symbols
	brObject    bracket = 0x32
	brArray     bracket = 0x3C
	brBinary    bracket = 0x46
	brObjectID  bracket = 0x50
	brBool      bracket = 0x5A
	brDate      bracket = 0x64
	brTimestamp bracket = 0x6E
	brRegex     bracket = 0x78
	brDBPointer bracket = 0x82
	brJS        bracket = 0x8C
	brJSScope   bracket = 0x96
	brMaxKey    bracket = 0xF0
)

// normalize maps the Go types a caller may hand us besides the ones
// bson.Unmarshal produces onto those, so the rest of the package deals with
// one representation per BSON type.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int32(x)
	case int16:
		return int32(x)
	case uint8:
		return int32(x)
	case uint16:
		return int32(x)
	case uint32:
		return int64(x)
	case uint:
		return uintValue(uint64(x))
	case uint64:
		return uintValue(x)
	case float32:
		return float64(x)
	case []any:
		return bson.A(x)
	case bson.Null:
		return nil
	case *bson.D:
		if x == nil {
			return nil
		}
		return *x
	}
	return v
}

func uintValue(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return float64(u)
}

// bracketOf reports v's bracket; v must be normalized. Go types that are not
// BSON values count as null: matching and ordering must not panic on them.
func bracketOf(v any) bracket {
	switch v.(type) {
	case bson.MinKey:
		return brMinKey
	case bson.Undefined:
		return brUndefined
	case nil:
		return brNull
	case int32, int64, float64, bson.Decimal128:
		return brNumber
	case string, bson.Symbol:
		return brString
	case bson.D:
		return brObject
	case bson.A:
		return brArray
	case bson.Binary:
		return brBinary
	case bson.ObjectID:
		return brObjectID
	case bool:
		return brBool
	case bson.DateTime:
		return brDate
	case bson.Timestamp:
		return brTimestamp
	case bson.Regex:
		return brRegex
	case bson.DBPointer:
		return brDBPointer
	case bson.JavaScript:
		return brJS
	case bson.CodeWithScope:
		return brJSScope
	case bson.MaxKey:
		return brMaxKey
	}
	return brNull
}

// asDoc and asArray accept the container types after normalization.
func asDoc(v any) (bson.D, bool) {
	switch x := v.(type) {
	case bson.D:
		return x, true
	case *bson.D:
		if x != nil {
			return *x, true
		}
	}
	return nil, false
}

func asArray(v any) (bson.A, bool) {
	switch x := v.(type) {
	case bson.A:
		return x, true
	case []any:
		return bson.A(x), true
	}
	return nil, false
}

// arrayAsDoc views an array as the document MongoDB stores it as, with keys
// "0", "1", ...; $elemMatch's object form matches nested arrays that way.
func arrayAsDoc(a bson.A) bson.D {
	d := make(bson.D, len(a))
	for i, v := range a {
		d[i] = bson.E{Key: strconv.Itoa(i), Value: v}
	}
	return d
}

// BSON type numbers, for $type.
const (
	typeDouble     = 1
	typeString     = 2
	typeObject     = 3
	typeArray      = 4
	typeBinary     = 5
	typeUndefined  = 6
	typeObjectID   = 7
	typeBool       = 8
	typeDate       = 9
	typeNull       = 10
	typeRegex      = 11
	typeDBPointer  = 12
	typeJS         = 13
	typeSymbol     = 14
	typeJSScope    = 15
	typeInt32      = 16
	typeTimestamp  = 17
	typeInt64      = 18
	typeDecimal    = 19
	typeMinKey     = -1
	typeMaxKey     = 127
	typeNotAnyType = 0
)

// typeCode is v's BSON type number; v must be normalized.
func typeCode(v any) int {
	switch v.(type) {
	case float64:
		return typeDouble
	case string:
		return typeString
	case bson.D:
		return typeObject
	case bson.A:
		return typeArray
	case bson.Binary:
		return typeBinary
	case bson.Undefined:
		return typeUndefined
	case bson.ObjectID:
		return typeObjectID
	case bool:
		return typeBool
	case bson.DateTime:
		return typeDate
	case nil:
		return typeNull
	case bson.Regex:
		return typeRegex
	case bson.DBPointer:
		return typeDBPointer
	case bson.JavaScript:
		return typeJS
	case bson.Symbol:
		return typeSymbol
	case bson.CodeWithScope:
		return typeJSScope
	case int32:
		return typeInt32
	case bson.Timestamp:
		return typeTimestamp
	case int64:
		return typeInt64
	case bson.Decimal128:
		return typeDecimal
	case bson.MinKey:
		return typeMinKey
	case bson.MaxKey:
		return typeMaxKey
	}
	return typeNotAnyType
}

// typeAlias is the BSON type number $type accepts a name for, MongoDB's
// spelling.
func typeAlias(name string) (int, bool) {
	switch name {
	case "double":
		return typeDouble, true
	case "string":
		return typeString, true
	case "object":
		return typeObject, true
	case "array":
		return typeArray, true
	case "binData":
		return typeBinary, true
	case "undefined":
		return typeUndefined, true
	case "objectId":
		return typeObjectID, true
	case "bool":
		return typeBool, true
	case "date":
		return typeDate, true
	case "null":
		return typeNull, true
	case "regex":
		return typeRegex, true
	case "dbPointer":
		return typeDBPointer, true
	case "javascript":
		return typeJS, true
	case "symbol":
		return typeSymbol, true
	case "javascriptWithScope":
		return typeJSScope, true
	case "int":
		return typeInt32, true
	case "timestamp":
		return typeTimestamp, true
	case "long":
		return typeInt64, true
	case "decimal":
		return typeDecimal, true
	case "minKey":
		return typeMinKey, true
	case "maxKey":
		return typeMaxKey, true
	}
	return 0, false
}

func validTypeCode(c int) bool {
	return (c >= typeDouble && c <= typeDecimal) || c == typeMinKey || c == typeMaxKey
}

// TypeName is MongoDB's name for the BSON type of v, as used in error
// messages and by $type.
func TypeName(v any) string {
	switch v.(type) {
	case float64:
		return "double"
	case string:
		return "string"
	case bson.D:
		return "object"
	case bson.A:
		return "array"
	case bson.Binary:
		return "binData"
	case bson.Undefined:
		return "undefined"
	case bson.ObjectID:
		return "objectId"
	case bool:
		return "bool"
	case bson.DateTime:
		return "date"
	case nil:
		return "null"
	case bson.Regex:
		return "regex"
	case bson.DBPointer:
		return "dbPointer"
	case bson.JavaScript:
		return "javascript"
	case bson.Symbol:
		return "symbol"
	case bson.CodeWithScope:
		return "javascriptWithScope"
	case int32:
		return "int"
	case bson.Timestamp:
		return "timestamp"
	case int64:
		return "long"
	case bson.Decimal128:
		return "decimal"
	case bson.MinKey:
		return "minKey"
	case bson.MaxKey:
		return "maxKey"
	default:
		return fmt.Sprintf("%T", v)
	}
}
