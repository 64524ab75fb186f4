package bsonx_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
)

// driverDecode is the reference Decode must match.
func driverDecode(raw []byte) (bson.D, error) {
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return d, nil
}

// same is reflect.DeepEqual except that doubles compare by their bits, so
// that NaN equals itself and -0 differs from 0.
func same(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case bson.D:
		y, ok := b.(bson.D)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !same(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case bson.A:
		y, ok := b.(bson.A)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case bson.CodeWithScope:
		y, ok := b.(bson.CodeWithScope)
		return ok && x.Code == y.Code && same(x.Scope, y.Scope)
	}
	return reflect.DeepEqual(a, b)
}

// checkSame decodes raw both ways and fails unless both succeed with the
// same result. It returns Decode's result.
func checkSame(t testing.TB, raw []byte) bson.D {
	t.Helper()
	want, err := driverDecode(raw)
	if err != nil {
		t.Fatalf("driver rejects %x: %v", raw, err)
	}
	got, err := bsonx.Decode(raw)
	if err != nil {
		t.Fatalf("Decode(%x): %v", raw, err)
	}
	if !same(got, want) {
		t.Fatalf("Decode(%x)\n got %#v\nwant %#v", raw, got, want)
	}
	return got
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return b
}

// Builders for hand-made BSON, for inputs bson.Marshal cannot produce.

// doc wraps elements in a length prefix and terminator.
func doc(elems ...[]byte) []byte {
	b := []byte{0, 0, 0, 0}
	for _, e := range elems {
		b = append(b, e...)
	}
	b = append(b, 0)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

// el is one element: type byte, key, value bytes.
func el(typ byte, key string, val ...[]byte) []byte {
	b := append([]byte{typ}, key...)
	b = append(b, 0)
	for _, v := range val {
		b = append(b, v...)
	}
	return b
}

func i32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func i64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// str is a BSON string with a truthful length.
func str(s string) []byte { return append(append(i32(int32(len(s)+1)), s...), 0) }

func cstr(s string) []byte { return append([]byte(s), 0) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// patchLen overwrites the length prefix at off.
func patchLen(b []byte, off int, n int32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], uint32(n))
	return b
}

// nestedDocs is depth documents inside the top-level one, alternating
// documents and arrays when arrays is set.
func nestedDocs(depth int, arrays bool) []byte {
	inner := doc(el(0x10, "0", i32(1)))
	for i := depth; i > 0; i-- {
		typ := byte(0x03)
		if arrays && i%2 == 0 {
			typ = 0x04
		}
		inner = doc(el(typ, "0", inner))
	}
	return inner
}
