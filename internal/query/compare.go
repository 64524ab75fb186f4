package query

import (
	"bytes"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Compare orders two BSON values as MongoDB sorts them, returning -1, 0 or 1.
//
// Values order first by type bracket: MinKey < undefined < null < numbers <
// strings and symbols < objects < arrays < binary < ObjectId < bool < date <
// timestamp < regex < DBPointer < JavaScript < JavaScript with scope <
// MaxKey. (MongoDB puts undefined just below null; an equality match on null
// matches undefined all the same, see Filter.) Within a bracket:
//   - numbers of all four types compare by exact value; NaN is below every
//     number and equal to itself, -0 equals 0. (MongoDB rounds a double to
//     34 digits before comparing it with a decimal, so a decimal agreeing
//     with a double's first 34 digits can be equal there and not here;
//     exactness is what lets keys be consistent);
//   - strings and symbols compare bytewise, a prefix first;
//   - objects compare field by field: the value's bracket, then the name,
//     then the value; a prefix first. Arrays compare element by element;
//   - binary by length, then subtype, then bytes; regexes by pattern, then
//     options; DBPointers by namespace length, namespace, then id; code with
//     scope by code, then scope.
//
// Compare agrees with AppendKey: Compare(a, b) is the sign of
// bytes.Compare(AppendKey(nil, a), AppendKey(nil, b)).
func Compare(a, b any) int {
	a, b = normalize(a), normalize(b)
	ba, bb := bracketOf(a), bracketOf(b)
	if ba != bb {
		return cmpInt64(int64(ba), int64(bb))
	}
	switch ba {
	case brNumber:
		return compareNumbers(a, b)
	case brString:
		return strings.Compare(stringValue(a), stringValue(b))
	case brObject:
		return compareDocs(a.(bson.D), b.(bson.D))
	case brArray:
		return compareArrays(a.(bson.A), b.(bson.A))
	case brBinary:
		x, y := a.(bson.Binary), b.(bson.Binary)
		if c := cmpInt64(int64(len(x.Data)), int64(len(y.Data))); c != 0 {
			return c
		}
		if c := cmpInt64(int64(x.Subtype), int64(y.Subtype)); c != 0 {
			return c
		}
		return bytes.Compare(x.Data, y.Data)
	case brObjectID:
		x, y := a.(bson.ObjectID), b.(bson.ObjectID)
		return bytes.Compare(x[:], y[:])
	case brBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case y:
			return -1
		}
		return 1
	case brDate:
		return cmpInt64(int64(a.(bson.DateTime)), int64(b.(bson.DateTime)))
	case brTimestamp:
		x, y := a.(bson.Timestamp), b.(bson.Timestamp)
		if c := cmpInt64(int64(x.T), int64(y.T)); c != 0 {
			return c
		}
		return cmpInt64(int64(x.I), int64(y.I))
	case brRegex:
		x, y := a.(bson.Regex), b.(bson.Regex)
		if c := strings.Compare(x.Pattern, y.Pattern); c != 0 {
			return c
		}
		return strings.Compare(x.Options, y.Options)
	case brDBPointer:
		x, y := a.(bson.DBPointer), b.(bson.DBPointer)
		if c := cmpInt64(int64(len(x.DB)), int64(len(y.DB))); c != 0 {
			return c
		}
		if c := strings.Compare(x.DB, y.DB); c != 0 {
			return c
		}
		return bytes.Compare(x.Pointer[:], y.Pointer[:])
	case brJS:
		return strings.Compare(string(a.(bson.JavaScript)), string(b.(bson.JavaScript)))
	case brJSScope:
		x, y := a.(bson.CodeWithScope), b.(bson.CodeWithScope)
		if c := strings.Compare(string(x.Code), string(y.Code)); c != 0 {
			return c
		}
		return compareDocs(scopeDoc(x.Scope), scopeDoc(y.Scope))
	}
	// MinKey, MaxKey, undefined, null: one value each.
	return 0
}

func stringValue(v any) string {
	if s, ok := v.(bson.Symbol); ok {
		return string(s)
	}
	return v.(string)
}

// scopeDoc is a code-with-scope's scope as a document; anything but a
// document counts as an empty scope.
func scopeDoc(v any) bson.D {
	d, _ := asDoc(normalize(v))
	return d
}

func compareDocs(a, b bson.D) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		va, vb := normalize(a[i].Value), normalize(b[i].Value)
		if c := cmpInt64(int64(bracketOf(va)), int64(bracketOf(vb))); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].Key, b[i].Key); c != 0 {
			return c
		}
		if c := Compare(va, vb); c != 0 {
			return c
		}
	}
	return cmpInt64(int64(len(a)), int64(len(b)))
}

func compareArrays(a, b bson.A) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt64(int64(len(a)), int64(len(b)))
}
