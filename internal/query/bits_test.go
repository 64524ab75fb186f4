package query

import (
	"bytes"
	"runtime"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Cases from MongoDB's $bitsAllSet/$bitsAnySet/$bitsAllClear/$bitsAnyClear
// reference pages: a: 54 (00110110), -5 sign-extended, BinData, doubles.
func TestBitsOperators(t *testing.T) {
	cases := []struct {
		filter, doc string
		want        bool
	}{
		{`{"a": {"$bitsAllSet": [1, 5]}}`, `{"a": 54}`, true},
		{`{"a": {"$bitsAllSet": [1, 0]}}`, `{"a": 54}`, false},
		{`{"a": {"$bitsAllSet": 50}}`, `{"a": 54}`, true},
		{`{"a": {"$bitsAllSet": 51}}`, `{"a": 54}`, false},
		{`{"a": {"$bitsAnySet": [0, 1]}}`, `{"a": 54}`, true},
		{`{"a": {"$bitsAnySet": [0, 3]}}`, `{"a": 54}`, false},
		{`{"a": {"$bitsAllClear": [0, 3]}}`, `{"a": 54}`, true},
		{`{"a": {"$bitsAllClear": 35}}`, `{"a": 54}`, false},
		{`{"a": {"$bitsAnyClear": [1, 0]}}`, `{"a": 54}`, true},
		{`{"a": {"$bitsAnyClear": [1, 2]}}`, `{"a": 54}`, false},
		// BinData mask: byte 0 = 0x30 names bits 4 and 5.
		{`{"a": {"$bitsAllSet": {"$binary": {"base64": "MA==", "subType": "00"}}}}`, `{"a": 54}`, true},
		// BinData values: bits past the end are clear.
		{`{"a": {"$bitsAllSet": [1, 2]}}`, `{"a": {"$binary": {"base64": "Bg==", "subType": "00"}}}`, true},
		{`{"a": {"$bitsAllClear": [100]}}`, `{"a": {"$binary": {"base64": "Bg==", "subType": "00"}}}`, true},
		// Negative numbers are sign-extended.
		{`{"a": {"$bitsAllSet": [200]}}`, `{"a": -5}`, true},
		{`{"a": {"$bitsAllSet": [200]}}`, `{"a": 5}`, false},
		{`{"a": {"$bitsAllClear": [2]}}`, `{"a": -5}`, true},
		{`{"a": {"$bitsAllSet": [0, 1, 63]}}`, `{"a": {"$numberLong": "-5"}}`, true},
		// Whole doubles and decimals count; fractional ones, NaN, strings never match.
		{`{"a": {"$bitsAllSet": 6}}`, `{"a": 6.0}`, true},
		{`{"a": {"$bitsAllSet": 6}}`, `{"a": {"$numberDecimal": "6"}}`, true},
		{`{"a": {"$bitsAllClear": 1}}`, `{"a": 6.5}`, false},
		{`{"a": {"$bitsAnyClear": 1}}`, `{"a": {"$numberDouble": "NaN"}}`, false},
		{`{"a": {"$bitsAllClear": 1}}`, `{"a": 1e20}`, false},
		{`{"a": {"$bitsAllClear": 1}}`, `{"a": "6"}`, false},
		{`{"a": {"$bitsAllClear": 1}}`, `{}`, false},
		// Arrays match by element; empty position lists are vacuous.
		{`{"a": {"$bitsAllSet": 3}}`, `{"a": [1, 7]}`, true},
		{`{"a": {"$bitsAllSet": []}}`, `{"a": 0}`, true},
		{`{"a": {"$bitsAnySet": []}}`, `{"a": 255}`, false},
		{`{"a": {"$not": {"$bitsAnySet": 1}}}`, `{"a": 2}`, true},
	}
	for _, c := range cases {
		f, err := ParseFilter(ej(t, c.filter))
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		if got := f.Match(ej(t, c.doc)); got != c.want {
			t.Errorf("%s on %s = %v, want %v", c.filter, c.doc, got, c.want)
		}
	}
}

func TestMatchedPosition(t *testing.T) {
	cases := []struct {
		filter, doc string
		want        string // "" for none
	}{
		{`{"a": 2}`, `{"a": [1, 2, 3]}`, "1"},
		{`{"a": {"$gt": 1}}`, `{"a": [0, 5, 7]}`, "1"},
		{`{"a.b": 4}`, `{"a": [{"b": [1, 2]}, {"b": [3, 4]}]}`, "1"},
		{`{"a": {"$elemMatch": {"b": 2, "c": 3}}}`, `{"a": [{"b": 2}, {"b": 2, "c": 3}]}`, "1"},
		{`{"a": {"$elemMatch": {"$gte": 5}}}`, `{"a": [1, 9]}`, "1"},
		{`{"_id": 1, "a.b": "x"}`, `{"_id": 1, "a": [{"b": "y"}, {"b": "x"}]}`, "1"},
		{`{"a": [1, 2]}`, `{"a": [1, 2]}`, ""},
		{`{"a": 1}`, `{"a": 1}`, ""},
		{`{"$or": [{"a": 2}]}`, `{"a": [1, 2]}`, ""},
		{`{"a": {"$ne": 3}}`, `{"a": [1, 2]}`, ""},
		{`{"a": {"$in": [7, 3]}}`, `{"a": [1, 3, 7]}`, "1"},
	}
	for _, c := range cases {
		f, err := ParseFilter(ej(t, c.filter))
		if err != nil {
			t.Fatal(err)
		}
		doc := ej(t, c.doc)
		if !f.Match(doc) {
			t.Fatalf("%s does not match %s", c.filter, c.doc)
		}
		got, _ := f.MatchedPosition(doc)
		if got != c.want {
			t.Errorf("%s on %s: position %q, want %q", c.filter, c.doc, got, c.want)
		}
	}
}

// A BinData mask is kept as it came: a 1 MiB mask of ones (8M positions)
// must not cost 64 MiB of positions, whatever a client sends.
func TestBitsBinDataMaskStaysItsSize(t *testing.T) {
	mask := bytes.Repeat([]byte{0xff}, 1<<20)
	filter := bson.D{{Key: "a", Value: bson.D{{Key: "$bitsAnyClear", Value: bson.Binary{Data: mask}}}}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, err := ParseFilter(filter)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("parsing a 1 MiB mask allocated %d MiB", grew>>20)
	}
	if f.Match(bson.D{{Key: "a", Value: int32(-1)}}) {
		t.Error("-1 has every bit set: $bitsAnyClear must not match")
	}
	if !f.Match(bson.D{{Key: "a", Value: int32(5)}}) {
		t.Error("5 has clear bits: $bitsAnyClear must match")
	}
	set := bson.D{{Key: "a", Value: bson.D{{Key: "$bitsAllSet", Value: bson.Binary{Data: []byte{0, 0x80}}}}}}
	if g, _ := ParseFilter(set); !g.Match(bson.D{{Key: "a", Value: int32(1 << 15)}}) || g.Match(bson.D{{Key: "a", Value: int32(1 << 14)}}) {
		t.Error("BinData mask byte 1 = 0x80 names bit 15 only")
	}
}
