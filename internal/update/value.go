package update

import (
	"bytes"
	"math"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// deepCopy returns v with every document and array copied, so the result
// can be modified in place without touching v. Scalars, including the byte
// slice of a bson.Binary, are shared: nothing in this package writes to
// them.
func deepCopy(v any) any {
	switch x := v.(type) {
	case bson.D:
		return copyDoc(x)
	case bson.A:
		if x == nil {
			return x
		}
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case bson.CodeWithScope:
		return bson.CodeWithScope{Code: x.Code, Scope: deepCopy(x.Scope)}
	default:
		return v
	}
}

func copyDoc(d bson.D) bson.D {
	if d == nil {
		return nil
	}
	out := make(bson.D, len(d))
	for i, e := range d {
		out[i] = bson.E{Key: e.Key, Value: deepCopy(e.Value)}
	}
	return out
}

// identical reports whether a and b would encode to the same BSON bytes:
// same types, same values, same field order. 1 and 1.0 are not identical,
// and neither are 0.0 and -0.0.
func identical(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bson.D:
		y, ok := b.(bson.D)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !identical(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case bson.A:
		y, ok := b.(bson.A)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !identical(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case bson.Binary:
		y, ok := b.(bson.Binary)
		return ok && x.Subtype == y.Subtype && bytes.Equal(x.Data, y.Data)
	case bson.CodeWithScope:
		y, ok := b.(bson.CodeWithScope)
		return ok && x.Code == y.Code && identical(x.Scope, y.Scope)
	case int32, int64, string, bool, bson.ObjectID, bson.DateTime, bson.Regex,
		bson.Timestamp, bson.Decimal128, bson.MinKey, bson.MaxKey, bson.Undefined,
		bson.JavaScript, bson.Symbol, bson.DBPointer:
		return a == b
	default:
		return reflect.DeepEqual(a, b)
	}
}

// lookupID returns the value of the top-level _id field.
func lookupID(doc bson.D) (any, bool) {
	for _, e := range doc {
		if e.Key == "_id" {
			return e.Value, true
		}
	}
	return nil, false
}

// idText renders the document's _id the way MongoDB names a document in
// error messages: "_id: 1", or "no id".
func idText(doc bson.D) string {
	if id, ok := lookupID(doc); ok {
		return "_id: " + formatValue(id)
	}
	return "no id"
}
