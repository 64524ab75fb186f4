package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Small typed accessors over a command document. Each returns a MongoDB
// error naming the field when the type is wrong, so handlers stay short.

func lookup(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

func typeErr(key, want string, v any) error {
	return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type '%s'", key, query.TypeName(v), want)
}

// getString returns a string field; def when absent.
func getString(d bson.D, key, def string) (string, error) {
	v, ok := lookup(d, key)
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", typeErr(key, "string", v)
	}
	return s, nil
}

// getDoc returns an embedded document; nil when absent.
func getDoc(d bson.D, key string) (bson.D, error) {
	v, ok := lookup(d, key)
	if !ok || v == nil {
		return nil, nil
	}
	doc, ok := v.(bson.D)
	if !ok {
		return nil, typeErr(key, "object", v)
	}
	return doc, nil
}

// getArray returns an array field; nil when absent.
func getArray(d bson.D, key string) (bson.A, error) {
	v, ok := lookup(d, key)
	if !ok || v == nil {
		return nil, nil
	}
	a, ok := v.(bson.A)
	if !ok {
		return nil, typeErr(key, "array", v)
	}
	return a, nil
}

// getBool accepts booleans and numbers (non-zero is true), as MongoDB does.
func getBool(d bson.D, key string, def bool) (bool, error) {
	v, ok := lookup(d, key)
	if !ok || v == nil {
		return def, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case int32:
		return b != 0, nil
	case int64:
		return b != 0, nil
	case float64:
		return b != 0, nil
	}
	return false, typeErr(key, "bool", v)
}

// getInt accepts any whole number that fits an int64.
func getInt(d bson.D, key string, def int64) (int64, error) {
	v, ok := lookup(d, key)
	if !ok || v == nil {
		return def, nil
	}
	n, ok := query.AsInt(v)
	if !ok {
		return 0, typeErr(key, "long", v)
	}
	return n, nil
}

// getNumber reads a number of any BSON numeric type.
func getNumber(d bson.D, key string, def float64) (float64, error) {
	v, ok := lookup(d, key)
	if !ok {
		return def, nil
	}
	if n, ok := asNumber(v); ok {
		return n, nil
	}
	return 0, typeErr(key, "number", v)
}
