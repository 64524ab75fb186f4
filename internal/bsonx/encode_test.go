package bsonx_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
)

// checkEncode fails unless Marshal, and AppendDocument after a prefix,
// produce exactly bson.Marshal(d). It returns Marshal's result.
func checkEncode(t testing.TB, d bson.D) []byte {
	t.Helper()
	want, err := bson.Marshal(d)
	if err != nil {
		t.Fatalf("driver rejects %#v: %v", d, err)
	}
	got, err := bsonx.Marshal(d)
	if err != nil {
		t.Fatalf("Marshal(%#v): %v", d, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%#v)\n got %x\nwant %x", d, got, want)
	}
	prefix := make([]byte, 3, 8)
	copy(prefix, "pre")
	app, err := bsonx.AppendDocument(prefix, d)
	if err != nil || string(app[:3]) != "pre" || !bytes.Equal(app[3:], want) {
		t.Fatalf("AppendDocument after a prefix = %x, %v; want pre%x", app, err, want)
	}
	return got
}

// encodeCases are documents beyond those the decoder's hand-written cases
// already give, each reaching one corner of the driver's encoder.
func encodeCases(t testing.TB) map[string]bson.D {
	oid := bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	stored := mustMarshal(t, bson.D{{Key: "_id", Value: oid}, {Key: "s", Value: "x"}, {Key: "a", Value: bson.A{int32(1), bson.D{}}}})

	var bins bson.D
	for sub := range 256 {
		for _, data := range [][]byte{nil, {}, {0xab}, {1, 2, 3, 4}, []byte("five!")} {
			bins = append(bins, bson.E{Key: "b", Value: bson.Binary{Subtype: byte(sub), Data: data}})
		}
	}

	var regexes bson.D
	for _, opts := range []string{"", "i", "xmi", "imsux", "xusmi", "ii", "zyxwvutsrqponmlkjihgfedcba", "éi", "i\xff", "\xff\xfe", "日s本"} {
		regexes = append(regexes, bson.E{Key: opts, Value: bson.Regex{Pattern: "^a.*" + opts, Options: opts}})
	}

	var times bson.D
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Unix(-1, 999_999_999), time.Unix(1700000000, 123_456_789),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("x", 3600)), time.Date(-5000, 1, 1, 0, 0, 0, 1, time.UTC)} {
		times = append(times, bson.E{Key: "t", Value: tm})
	}

	var ints bson.D
	for _, n := range []int{0, -1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64} {
		ints = append(ints, bson.E{Key: "i", Value: n})
	}

	deep := bson.D{{Key: "leaf", Value: int32(1)}}
	for i := range 150 {
		if i%2 == 0 {
			deep = bson.D{{Key: "d", Value: bson.A{"x", deep}}}
		} else {
			deep = bson.D{{Key: "d", Value: deep}}
		}
	}

	return map[string]bson.D{
		"empty":  {},
		"deep":   deep,
		"binary": bins,
		"regex":  regexes,
		"time":   times,
		"int":    ints,
		"doubles": {{Key: "nan", Value: math.NaN()}, {Key: "payload", Value: math.Float64frombits(0x7ff0000000000001)},
			{Key: "inf", Value: math.Inf(1)}, {Key: "-inf", Value: math.Inf(-1)}, {Key: "-0", Value: math.Copysign(0, -1)}},
		"decimals": {{Key: "nan", Value: decimal(t, "NaN")}, {Key: "-inf", Value: decimal(t, "-Infinity")},
			{Key: "-0", Value: decimal(t, "-0")}, {Key: "max", Value: decimal(t, "9999999999999999999999999999999999E+6111")},
			{Key: "tiny", Value: decimal(t, "-1E-6176")}, {Key: "raw", Value: bson.NewDecimal128(math.MaxUint64, math.MaxUint64)}},
		"code with scope": {{Key: "d", Value: bson.CodeWithScope{Code: "f()", Scope: bson.D{{Key: "x", Value: bson.CodeWithScope{Code: "g", Scope: bson.D{}}}}}},
			{Key: "raw", Value: bson.CodeWithScope{Code: "\x00", Scope: bson.Raw(stored)}},
			{Key: "map", Value: bson.CodeWithScope{Code: "m", Scope: bson.M{"k": "v"}}},
			{Key: "in array", Value: bson.A{bson.CodeWithScope{Code: "", Scope: bson.D{{Key: "a", Value: bson.A{}}}}}}},
		"dbpointer": {{Key: "p", Value: bson.DBPointer{DB: "db.c", Pointer: oid}}, {Key: "empty", Value: bson.DBPointer{}}},
		"raw": {{Key: "stored", Value: bson.Raw(stored)}, {Key: "empty", Value: bson.Raw{5, 0, 0, 0, 0}},
			{Key: "batch", Value: bson.A{bson.Raw(stored), bson.Raw(stored)}},
			// Only the top level is walked; trailing bytes are dropped.
			{Key: "trailing", Value: append(bson.Raw(bytes.Clone(stored)), 1, 2, 3)},
			{Key: "odd boolean", Value: bson.Raw(doc(el(0x08, "b", []byte{7})))},
			{Key: "bad inside", Value: bson.Raw(doc(el(0x03, "d", i32(6), []byte{0xee, 0xee})))},
			{Key: "empty string", Value: bson.Raw(doc(el(0x02, "s", i32(0))))}},
		"mixed array": {{Key: "a", Value: bson.A{int32(1), "two", 3.0, nil, bson.D{{Key: "x", Value: bson.A{}}}, bson.A{bson.A{}}, true,
			bson.MinKey{}, bson.MaxKey{}, bson.Undefined{}, oid, bson.DateTime(-1), bson.Timestamp{T: 1, I: 2}, int64(-5),
			bson.Symbol("s"), bson.JavaScript("js"), bson.Binary{Subtype: 2, Data: []byte("old")}}}},
		"long array": {{Key: "a", Value: make(bson.A, 1234)}},
		"strings": {{Key: "é日本😀", Value: "ünïcødé ✓ 😀"}, {Key: "\xff\xfe", Value: "\xc3\x28 \xed\xa0\x80"}, {Key: "nul", Value: "a\x00b"},
			{Key: "", Value: ""}, {Key: "js", Value: bson.JavaScript("\x00\xff")}, {Key: "sym", Value: bson.Symbol("\x00")}},
		"duplicate keys": {{Key: "a", Value: int32(1)}, {Key: "a", Value: "two"}, {Key: "a", Value: bson.D{{Key: "a", Value: nil}, {Key: "a", Value: nil}}}},
		"nil containers": {{Key: "d", Value: bson.D(nil)}, {Key: "a", Value: bson.A(nil)}, {Key: "e", Value: []bson.E(nil)},
			{Key: "any", Value: []any(nil)}, {Key: "bytes", Value: []byte(nil)}, {Key: "in array", Value: bson.A{bson.D(nil), bson.A(nil), nil}}},
		"go types": {{Key: "e", Value: []bson.E{{Key: "x", Value: int32(1)}}}, {Key: "any", Value: []any{"x", 1, int64(2)}},
			{Key: "bytes", Value: []byte("bytes")}, {Key: "empty bytes", Value: []byte{}}, {Key: "null", Value: bson.Null{}}},
		"driver types": {{Key: "m", Value: bson.M{"k": int32(1)}}, {Key: "map", Value: map[string]any{"k": bson.D{{Key: "x", Value: 1}}}},
			{Key: "uint", Value: uint(5)}, {Key: "uint32", Value: uint32(5)}, {Key: "uint8", Value: uint8(5)}, {Key: "int8", Value: int8(-5)},
			{Key: "float32", Value: float32(1.25)}, {Key: "ptr", Value: &bson.D{{Key: "x", Value: "y"}}}, {Key: "nil ptr", Value: (*int)(nil)},
			{Key: "struct", Value: struct {
				A int
				B string `bson:"b,omitempty"`
			}{A: 1}}, {Key: "named", Value: namedString("n")}, {Key: "json", Value: json.Number("12")},
			{Key: "strings", Value: []string{"a", "b"}}, {Key: "raw value", Value: bson.RawValue{Type: bson.TypeInt32, Value: i32(9)}},
			{Key: "marshaler", Value: marshaler{}}, {Key: "value marshaler", Value: valueMarshaler{}}},
	}
}

type namedString string

type marshaler struct{}

func (marshaler) MarshalBSON() ([]byte, error) { return bson.Marshal(bson.D{{Key: "m", Value: true}}) }

type valueMarshaler struct{}

func (valueMarshaler) MarshalBSONValue() (byte, []byte, error) {
	return byte(bson.TypeString), str("vm"), nil
}

func TestEncodeCases(t *testing.T) {
	for name, d := range encodeCases(t) {
		t.Run(name, func(t *testing.T) { checkEncode(t, d) })
	}
}

// TestEncodeHandCases re-encodes what the driver decodes from each of the
// decoder's hand-written inputs, quirks included.
func TestEncodeHandCases(t *testing.T) {
	for _, tc := range handCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			d, err := driverDecode(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			checkEncode(t, d)
		})
	}
}

// TestRegexOptionsSorted pins the driver behaviour that makes encoding
// differ from a plain copy of the options.
func TestRegexOptionsSorted(t *testing.T) {
	got := checkEncode(t, bson.D{{Key: "r", Value: bson.Regex{Pattern: "p", Options: "xmi"}}})
	if want := doc(el(0x0B, "r", cstr("p"), cstr("imx"))); !bytes.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestEncodeRandomDocuments(t *testing.T) {
	g := newGen(3)
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		d := g.doc(0)
		raw := checkEncode(t, d)
		back, err := bsonx.Decode(raw)
		if err != nil {
			t.Fatalf("Decode(Marshal(%#v)): %v", d, err)
		}
		if !same(back, d) {
			t.Fatalf("round trip\n got %#v\nwant %#v", back, d)
		}
		checkEncode(t, mixGoTypes(g, d))
	}
}

// mixGoTypes returns a copy of d in which some values have been replaced
// by other Go values the driver encodes the same way or nearly: documents
// by their bson.Raw or []bson.E form, arrays by []any, int32 by int.
func mixGoTypes(g *gen, d bson.D) bson.D {
	out := make(bson.D, len(d))
	for i, e := range d {
		out[i] = bson.E{Key: e.Key, Value: mixValue(g, e.Value)}
	}
	return out
}

func mixValue(g *gen, v any) any {
	switch v := v.(type) {
	case bson.D:
		switch g.r.IntN(3) {
		case 0:
			raw, err := bson.Marshal(v)
			if err != nil {
				panic(err)
			}
			return bson.Raw(raw)
		case 1:
			return []bson.E(mixGoTypes(g, v))
		}
		return mixGoTypes(g, v)
	case bson.A:
		a := make([]any, len(v))
		for i := range v {
			a[i] = mixValue(g, v[i])
		}
		if g.r.IntN(2) == 0 {
			return a
		}
		return bson.A(a)
	case bson.CodeWithScope:
		return bson.CodeWithScope{Code: v.Code, Scope: mixValue(g, v.Scope)}
	case int32:
		if g.r.IntN(2) == 0 {
			return int(v)
		}
	}
	return v
}

// rawCase is an already-encoded document to embed; ok is whether the
// driver accepts it, so that both outcomes are known to be exercised.
type rawCase struct {
	name string
	raw  []byte
	ok   bool
}

func rawCases(t testing.TB) []rawCase {
	valid := mustMarshal(t, bson.D{{Key: "a", Value: int32(1)}, {Key: "s", Value: "str"}})
	return []rawCase{
		{"valid", valid, true},
		{"empty", doc(), true},
		{"trailing bytes", append(bytes.Clone(valid), 0xff), true},
		{"nil", nil, false},
		{"three bytes", []byte{5, 0, 0}, false},
		{"negative length", patchLen(doc(), 0, -5), false},
		{"length 4", patchLen(doc(), 0, 4), false},
		{"length past the bytes", patchLen(valid, 0, int32(len(valid)+1)), false},
		{"missing terminator", cat(i32(11), el(0x10, "a", i32(1))), false},
		{"element in place of the terminator", cat(i32(12), el(0x10, "a", i32(1)), []byte{0x0A}), false},
		{"early terminator", patchLen(cat(i32(0), []byte{0}, el(0x10, "a", i32(1)), []byte{0}), 0, 13), false},
		{"unknown type", doc(el(0x14, "a", i32(1))), false},
		{"type 0x13 truncated", doc(el(0x13, "a", i64(1))), false},
		{"truncated int32", cat(i32(9), []byte{0x10, 'a', 0, 1, 0}), false},
		{"unterminated key", cat(i32(7), []byte{0x0A, 'a', 'b'}), false},
		{"negative string length", doc(el(0x02, "s", i32(-1))), false},
		// Taken at face value, the -1 would make the last length byte a
		// MinKey with an empty key: a valid-looking document.
		{"negative string length hiding an element", doc(el(0x02, "s", i32(-1)), []byte{0}), false},
		{"huge string length", doc(el(0x02, "s", i32(math.MaxInt32), cstr(""))), false},
		{"binary length overflowing int32", doc(el(0x05, "b", i32(math.MaxInt32-2), []byte{0})), false},
		{"dbpointer truncated", doc(el(0x0C, "p", str("ns"), make([]byte, 11))), false},
		{"regex one cstring", doc(el(0x0B, "r", []byte("abc"))), false},
		{"nested length zero", doc(el(0x03, "d", i32(0))), false},
		{"nested length past the end", doc(el(0x03, "d", i32(100))), false},
	}
}

// checkRaw embeds raw at several places and fails unless bsonx and the
// driver both reject every document or produce the same bytes. It reports
// whether the driver accepted the embedding.
func checkRaw(t testing.TB, raw []byte) bool {
	t.Helper()
	docs := []bson.D{
		{{Key: "r", Value: bson.Raw(raw)}},
		{{Key: "a", Value: bson.A{int32(1), bson.Raw(raw)}}},
		{{Key: "c", Value: bson.CodeWithScope{Code: "x", Scope: bson.Raw(raw)}}},
	}
	accepted := 0
	for _, d := range docs {
		want, werr := bson.Marshal(d)
		got, err := bsonx.Marshal(d)
		if (err != nil) != (werr != nil) {
			t.Fatalf("raw %x: Marshal error %v, driver error %v", raw, err, werr)
		}
		if err != nil {
			if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.InvalidBSON {
				t.Fatalf("raw %x: error %v is not InvalidBSON", raw, err)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("raw %x\n got %x\nwant %x", raw, got, want)
		}
		accepted++
	}
	if accepted != 0 && accepted != len(docs) {
		t.Fatalf("raw %x accepted in %d of %d places", raw, accepted, len(docs))
	}
	return accepted > 0
}

func TestEncodeRaw(t *testing.T) {
	for _, tc := range rawCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			if ok := checkRaw(t, tc.raw); ok != tc.ok {
				t.Fatalf("driver accepts %x: %v, want %v", tc.raw, ok, tc.ok)
			}
		})
	}
}

// TestEncodeCorruptRaw embeds damaged random documents: every one must be
// rejected by both encoders or copied identically by both.
func TestEncodeCorruptRaw(t *testing.T) {
	g := newGen(4)
	n := 3000
	if testing.Short() {
		n = 300
	}
	var accepted, rejected int
	for range n {
		raw := mustMarshal(t, g.doc(0))
		switch g.r.IntN(4) {
		case 0:
			raw = raw[:g.r.IntN(len(raw)+1)]
		case 1:
			raw[g.r.IntN(len(raw))] = byte(g.r.IntN(256))
		case 2:
			raw[g.r.IntN(len(raw))] ^= 1 << g.r.IntN(8)
		case 3:
			raw = patchLen(raw, 0, int32(len(raw)+g.r.IntN(9)-4))
		}
		if checkRaw(t, raw) {
			accepted++
		} else {
			rejected++
		}
	}
	if accepted == 0 || rejected == 0 {
		t.Fatalf("accepted %d, rejected %d: one outcome never exercised", accepted, rejected)
	}
}

func FuzzEncodeRaw(f *testing.F) {
	for _, tc := range rawCases(f) {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRaw(t, raw) })
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		d    bson.D
		code mongoerr.Code
	}{
		{"nil document", nil, mongoerr.InternalError},
		{"nul in key", bson.D{{Key: "a\x00b", Value: int32(1)}}, mongoerr.BadValue},
		{"nul ending key", bson.D{{Key: "ok", Value: 1.0}, {Key: "a\x00", Value: nil}}, mongoerr.BadValue},
		{"nul in nested key", bson.D{{Key: "d", Value: bson.D{{Key: "\x00", Value: nil}}}}, mongoerr.BadValue},
		{"nul in key in array", bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "x\x00", Value: nil}}}}}, mongoerr.BadValue},
		{"nul in []bson.E key", bson.D{{Key: "e", Value: []bson.E{{Key: "x\x00", Value: nil}}}}, mongoerr.BadValue},
		{"nul in scope key", bson.D{{Key: "c", Value: bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "\x00", Value: nil}}}}}, mongoerr.BadValue},
		{"nul in regex pattern", bson.D{{Key: "r", Value: bson.Regex{Pattern: "a\x00", Options: "i"}}}, mongoerr.BadValue},
		{"nul in regex options", bson.D{{Key: "r", Value: bson.Regex{Pattern: "a", Options: "\x00i"}}}, mongoerr.BadValue},
		{"nul in regex in array", bson.D{{Key: "a", Value: bson.A{bson.Regex{Pattern: "\x00"}}}}, mongoerr.BadValue},
		{"nul in key of a map", bson.D{{Key: "m", Value: bson.M{"x\x00": 1}}}, mongoerr.InternalError},
		{"nil scope", bson.D{{Key: "c", Value: bson.CodeWithScope{Code: "x"}}}, mongoerr.InternalError},
		{"nil bson.D scope", bson.D{{Key: "c", Value: bson.CodeWithScope{Code: "x", Scope: bson.D(nil)}}}, mongoerr.InternalError},
		{"uint64 past int64", bson.D{{Key: "u", Value: uint64(math.MaxUint64)}}, mongoerr.InternalError},
		{"unsupported type", bson.D{{Key: "f", Value: func() {}}}, mongoerr.InternalError},
		{"bad raw", bson.D{{Key: "r", Value: bson.Raw{1, 2}}}, mongoerr.InvalidBSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := bson.Marshal(tc.d); err == nil {
				t.Fatal("the driver accepts the document")
			}
			got, err := bsonx.Marshal(tc.d)
			if e, ok := mongoerr.As(err); !ok || e.Code != tc.code || got != nil {
				t.Fatalf("Marshal = %x, %v; want nil and a %s error", got, err, tc.code.Name())
			}
			dst := []byte("keep")
			app, err := bsonx.AppendDocument(dst, tc.d)
			if err == nil || string(app) != "keep" {
				t.Fatalf("AppendDocument = %q, %v; want the untouched prefix and an error", app, err)
			}
		})
	}
}

// TestFallbackErrorKeepsCause checks that the driver's reason survives for
// the log when a value is handed to the driver.
func TestFallbackErrorKeepsCause(t *testing.T) {
	_, err := bsonx.Marshal(bson.D{{Key: "u", Value: uint64(math.MaxUint64)}})
	e, ok := mongoerr.As(err)
	if !ok || e.Cause == nil || errors.Unwrap(err) != e.Cause || !strings.Contains(e.Msg, "uint64") {
		t.Fatalf("error %#v lacks the type or the driver's cause", err)
	}
}

// TestEncodeAllocations checks that encoding the types tierdb uses into a
// buffer with room allocates nothing, and that Marshal allocates only its
// result for a document that fits its scratch buffer.
func TestEncodeAllocations(t *testing.T) {
	oid := bson.ObjectID{1}
	stored := mustMarshal(t, bson.D{{Key: "_id", Value: oid}})
	d := bson.D{{Key: "s", Value: "str"}, {Key: "i", Value: int32(1)}, {Key: "l", Value: int64(2)}, {Key: "f", Value: 1.5},
		{Key: "b", Value: true}, {Key: "n", Value: nil}, {Key: "d", Value: bson.D{{Key: "x", Value: bson.A{int32(1), "y"}}}},
		{Key: "raw", Value: bson.A{bson.Raw(stored)}}, {Key: "oid", Value: oid}, {Key: "dt", Value: bson.DateTime(1)},
		{Key: "bin", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "int", Value: 7},
		{Key: "ts", Value: bson.Timestamp{T: 1}}, {Key: "dec", Value: decimal(t, "1.5")}, {Key: "re", Value: bson.Regex{Pattern: "a", Options: "xi"}},
		{Key: "min", Value: bson.MinKey{}}, {Key: "cws", Value: bson.CodeWithScope{Code: "c", Scope: bson.D{{Key: "v", Value: int32(1)}}}},
		{Key: "e", Value: []bson.E{{Key: "k", Value: "v"}}}, {Key: "time", Value: time.Unix(1, 0)}, {Key: "bytes", Value: []byte("b")}}
	want := checkEncode(t, d)
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(50, func() {
		var err error
		if buf, err = bsonx.AppendDocument(buf[:0], d); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendDocument allocates %v times per call, want 0", n)
	}
	if !bytes.Equal(buf, want) {
		t.Fatalf("AppendDocument into a reused buffer = %x, want %x", buf, want)
	}
	small := bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
	if n := testing.AllocsPerRun(50, func() {
		if _, err := bsonx.Marshal(small); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("Marshal allocates %v times per call, want 1", n)
	}
}
