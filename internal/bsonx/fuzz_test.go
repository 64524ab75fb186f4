package bsonx_test

import (
	"testing"

	"tierdb/internal/bsonx"
)

// FuzzDecode checks that Decode never panics, accepts nothing the driver
// rejects, and agrees with the driver on what both accept.
func FuzzDecode(f *testing.F) {
	for _, tc := range handCases(f) {
		f.Add(tc.raw)
	}
	g := newGen(2)
	for range 50 {
		f.Add(mustMarshal(f, g.doc(0)))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := bsonx.Decode(raw)
		want, werr := driverDecode(raw)
		if err != nil {
			if got != nil {
				t.Fatalf("Decode returned %v with error %v", got, err)
			}
			return
		}
		if werr != nil {
			t.Fatalf("Decode accepted %x, which the driver rejects: %v", raw, werr)
		}
		if !same(got, want) {
			t.Fatalf("Decode(%x)\n got %#v\nwant %#v", raw, got, want)
		}
	})
}
