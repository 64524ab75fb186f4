package bsonx_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
)

type handCase struct {
	name string
	raw  []byte
	// quirk marks inputs the driver does not reproduce when re-marshalling
	// what it decoded, so only equality with the driver is checked.
	quirk bool
}

func decimal(t testing.TB, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("ParseDecimal128(%q): %v", s, err)
	}
	return d
}

func handCases(t testing.TB) []handCase {
	oid := bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	m := func(name string, d bson.D) handCase { return handCase{name: name, raw: mustMarshal(t, d)} }
	var bins bson.D
	for _, sub := range []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x80, 0xff} {
		bins = append(bins, bson.E{Key: "b", Value: bson.Binary{Subtype: sub, Data: []byte{sub, 0, 0xff}}})
		bins = append(bins, bson.E{Key: "empty", Value: bson.Binary{Subtype: sub ^ 0x80, Data: []byte{}}})
	}
	var decs bson.D
	for _, s := range []string{"NaN", "-NaN", "Infinity", "-Infinity", "0", "-0", "0E+6111", "1E+6144", "-1E-6176",
		"9999999999999999999999999999999999E+6111", "1.000000000000000000000000000000000E-6143", "-0.0001"} {
		decs = append(decs, bson.E{Key: s, Value: decimal(t, s)})
	}
	return []handCase{
		m("empty document", bson.D{}),
		m("every type", bson.D{
			{Key: "double", Value: 1.5}, {Key: "string", Value: "s"}, {Key: "doc", Value: bson.D{{Key: "a", Value: int32(1)}}},
			{Key: "array", Value: bson.A{int32(1), "two", bson.D{}}}, {Key: "binary", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
			{Key: "undefined", Value: bson.Undefined{}}, {Key: "oid", Value: oid}, {Key: "true", Value: true}, {Key: "false", Value: false},
			{Key: "date", Value: bson.DateTime(1700000000000)}, {Key: "null", Value: nil},
			{Key: "regex", Value: bson.Regex{Pattern: "^a.*b$", Options: "imsux"}},
			{Key: "dbpointer", Value: bson.DBPointer{DB: "db.c", Pointer: oid}}, {Key: "js", Value: bson.JavaScript("function(){}")},
			{Key: "symbol", Value: bson.Symbol("sym")},
			{Key: "cws", Value: bson.CodeWithScope{Code: "x+y", Scope: bson.D{{Key: "x", Value: int32(1)}, {Key: "y", Value: bson.A{}}}}},
			{Key: "int32", Value: int32(-7)}, {Key: "ts", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "int64", Value: int64(1) << 40},
			{Key: "decimal", Value: decimal(t, "3.14")}, {Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
		}),
		m("empty containers", bson.D{{Key: "d", Value: bson.D{}}, {Key: "a", Value: bson.A{}}, {Key: "aa", Value: bson.A{bson.A{}, bson.D{}}},
			{Key: "cws", Value: bson.CodeWithScope{Code: "", Scope: bson.D{}}}, {Key: "s", Value: ""}, {Key: "", Value: ""}}),
		{name: "depth limit", raw: nestedDocs(bsonx.MaxDepth, false)},
		{name: "depth limit with arrays", raw: nestedDocs(bsonx.MaxDepth, true)},
		m("integer extremes", bson.D{{Key: "a", Value: int32(math.MinInt32)}, {Key: "b", Value: int32(math.MaxInt32)},
			{Key: "c", Value: int64(math.MinInt64)}, {Key: "d", Value: int64(math.MaxInt64)}, {Key: "e", Value: int32(0)},
			{Key: "f", Value: int32(255)}, {Key: "g", Value: int32(256)}, {Key: "h", Value: int64(-1)},
			{Key: "dt", Value: bson.DateTime(math.MinInt64)}, {Key: "dt", Value: bson.DateTime(math.MaxInt64)},
			{Key: "ts", Value: bson.Timestamp{T: math.MaxUint32, I: math.MaxUint32}}}),
		m("doubles", bson.D{{Key: "nan", Value: math.NaN()}, {Key: "nan payload", Value: math.Float64frombits(0xfff0000000000123)},
			{Key: "inf", Value: math.Inf(1)}, {Key: "-inf", Value: math.Inf(-1)}, {Key: "-0", Value: math.Copysign(0, -1)},
			{Key: "0", Value: 0.0}, {Key: "max", Value: math.MaxFloat64}, {Key: "tiny", Value: math.SmallestNonzeroFloat64}}),
		m("decimal128 specials", decs),
		m("binary subtypes", bins),
		// Old binary: outer length 4+n, inner length n.
		{name: "old binary", raw: doc(el(0x05, "b", i32(7), []byte{2}, i32(3), []byte("abc")))},
		// The driver takes the inner length bytes of an empty old binary as
		// its data, and does the same with outer lengths below 4.
		{name: "empty old binary", raw: doc(el(0x05, "b", i32(4), []byte{2}, i32(0))), quirk: true},
		{name: "short old binary", raw: doc(el(0x05, "b", i32(3), []byte{2}, []byte("abc"))), quirk: true},
		m("regex options", bson.D{{Key: "a", Value: bson.Regex{Pattern: "", Options: ""}}, {Key: "b", Value: bson.Regex{Pattern: "a/b\\", Options: "i"}}}),
		// The driver sorts options when encoding, not when decoding.
		{name: "unsorted regex options", raw: doc(el(0x0B, "r", cstr("p"), cstr("xmi"))), quirk: true},
		m("code with scope", bson.D{{Key: "c", Value: bson.CodeWithScope{Code: "f()", Scope: bson.D{
			{Key: "n", Value: bson.CodeWithScope{Code: "g", Scope: bson.D{{Key: "z", Value: nil}}}}}}}}),
		m("dbpointer", bson.D{{Key: "p", Value: bson.DBPointer{DB: "", Pointer: oid}}}),
		m("duplicate keys", bson.D{{Key: "a", Value: int32(1)}, {Key: "a", Value: "two"}, {Key: "a", Value: bson.D{{Key: "a", Value: nil}, {Key: "a", Value: nil}}}}),
		m("unicode", bson.D{{Key: "é日本😀", Value: "ünïcødé ✓ 😀"}, {Key: "s", Value: bson.Symbol("ß")}}),
		m("invalid utf-8", bson.D{{Key: "\xff\xfe", Value: "\xc3\x28 \xed\xa0\x80"}, {Key: "js", Value: bson.JavaScript("\x80")}}),
		m("nul inside strings", bson.D{{Key: "s", Value: "a\x00b"}, {Key: "js", Value: bson.JavaScript("\x00")}}),
		// Arrays are decoded by position; their keys are not checked.
		{name: "array with odd keys", raw: doc(el(0x04, "a", doc(el(0x10, "0", i32(1)), el(0x10, "5", i32(2)), el(0x02, "x", str("s")), el(0x0A, "")))), quirk: true},
		m("long string", bson.D{{Key: "s", Value: strings.Repeat("long ", 10000)}}),
	}
}

func TestHandWritten(t *testing.T) {
	for _, tc := range handCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := checkSame(t, tc.raw)
			if tc.quirk {
				return
			}
			if again := mustMarshal(t, got); !bytes.Equal(again, tc.raw) {
				t.Fatalf("re-marshalled\n got %x\nwant %x", again, tc.raw)
			}
		})
	}
}

// TestQuirks pins the cases where Decode follows the driver into results
// that do not re-encode to the input.
func TestQuirks(t *testing.T) {
	got := checkSame(t, doc(el(0x05, "b", i32(4), []byte{2}, i32(0))))
	if b := got[0].Value.(bson.Binary); b.Subtype != 2 || !bytes.Equal(b.Data, []byte{0, 0, 0, 0}) {
		t.Errorf("empty old binary = %#v", b)
	}
	got = checkSame(t, doc(el(0x0B, "r", cstr("p"), cstr("xmi"))))
	if r := got[0].Value.(bson.Regex); r.Options != "xmi" {
		t.Errorf("regex options = %q, want them unsorted", r.Options)
	}
	got = checkSame(t, doc(el(0x04, "a", doc(el(0x10, "0", i32(1)), el(0x10, "5", i32(2))))))
	if a := got[0].Value.(bson.A); len(a) != 2 || a[1] != int32(2) {
		t.Errorf("array with keys 0, 5 = %#v", a)
	}
}

func TestEmptyResultsAreNotNil(t *testing.T) {
	got := checkSame(t, mustMarshal(t, bson.D{{Key: "d", Value: bson.D{}}, {Key: "a", Value: bson.A{}}, {Key: "b", Value: bson.Binary{}}}))
	if got[0].Value.(bson.D) == nil || got[1].Value.(bson.A) == nil || got[2].Value.(bson.Binary).Data == nil {
		t.Fatalf("empty values decoded as nil: %#v", got)
	}
	top, err := bsonx.Decode(mustMarshal(t, bson.D{}))
	if err != nil || top == nil || len(top) != 0 {
		t.Fatalf("empty document = %#v, %v", top, err)
	}
}

func TestRandomDocuments(t *testing.T) {
	g := newGen(1)
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		d := g.doc(0)
		raw := mustMarshal(t, d)
		got := checkSame(t, raw)
		if again := mustMarshal(t, got); !bytes.Equal(again, raw) {
			t.Fatalf("document %d re-marshalled\n got %x\nwant %x", i, again, raw)
		}
	}
}

// TestNoAliasing checks that the result survives the input being
// overwritten, and that binary payloads do not share memory.
func TestNoAliasing(t *testing.T) {
	d := bson.D{{Key: "s", Value: "string"}, {Key: "b", Value: bson.Binary{Data: []byte("bin1")}},
		{Key: "c", Value: bson.Binary{Data: []byte("bin2")}}, {Key: "n", Value: bson.A{"x", bson.Regex{Pattern: "p", Options: "i"}}}}
	raw := mustMarshal(t, d)
	got, err := bsonx.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	before := mustMarshal(t, got)
	for i := range raw {
		raw[i] = 0xAA
	}
	if after := mustMarshal(t, got); !bytes.Equal(after, before) {
		t.Fatalf("result changed with its input: %v", got)
	}
	b := got[1].Value.(bson.Binary).Data
	b = append(b[:cap(b)], 'X')
	b[0] = 'Z'
	if c := got[2].Value.(bson.Binary).Data; string(c) != "bin2" {
		t.Fatalf("writing one binary changed another: %q", c)
	}
}

func TestMaxDepthMatchesRejection(t *testing.T) {
	for _, arrays := range []bool{false, true} {
		if _, err := bsonx.Decode(nestedDocs(bsonx.MaxDepth, arrays)); err != nil {
			t.Errorf("depth %d (arrays %v): %v", bsonx.MaxDepth, arrays, err)
		}
		if _, err := bsonx.Decode(nestedDocs(bsonx.MaxDepth+1, arrays)); err == nil || !strings.Contains(err.Error(), "nesting deeper") {
			t.Errorf("depth %d (arrays %v) = %v, want nesting error", bsonx.MaxDepth+1, arrays, err)
		}
	}
}

func TestInvalid(t *testing.T) {
	valid := doc(el(0x10, "a", i32(1)))
	cws := func(total int32, code []byte, scope []byte) []byte {
		return doc(el(0x0F, "c", i32(total), code, scope))
	}
	scope := doc()
	deepCWS := doc(el(0x0F, "c", i32(int32(4+6+len(nestedDocs(bsonx.MaxDepth, false)))), str("x"), nestedDocs(bsonx.MaxDepth, false)))
	cases := []struct {
		name, want string
		raw        []byte
	}{
		{"nil", "shorter than", nil},
		{"four bytes", "shorter than", []byte{4, 0, 0, 0}},
		{"length prefix too big", "does not match", patchLen(valid, 0, int32(len(valid)+1))},
		{"length prefix too small", "does not match", patchLen(valid, 0, int32(len(valid)-1))},
		{"negative length", "does not match", patchLen(valid, 0, -1)},
		{"trailing byte", "does not match", append(bytes.Clone(valid), 0)},
		{"missing terminator", "does not end with 0x00", append(patchLen(valid, 0, int32(len(valid)))[:len(valid)-1], 1)},
		{"truncated int32", "needs 4 bytes", doc(el(0x10, "a", []byte{1, 2, 3}))},
		{"truncated double", "needs 8 bytes", doc(el(0x01, "a", []byte{1, 2, 3, 4, 5, 6, 7}))},
		{"truncated decimal", "needs 16 bytes", doc(el(0x13, "a", make([]byte, 15)))},
		{"truncated objectid", "needs 12 bytes", doc(el(0x07, "a", make([]byte, 11)))},
		{"truncated bool", "needs 1 bytes", doc(el(0x08, "a"))},
		{"bad bool", "boolean byte", doc(el(0x08, "a", []byte{2}))},
		{"unknown type", "unknown type 0x14", doc(el(0x14, "a", i32(1)))},
		{"type 0x80", "unknown type 0x80", doc(el(0x80, "a"))},
		{"early terminator", "unknown type 0x00", doc([]byte{0}, el(0x10, "a", i32(1)))},
		{"key not terminated", "name not terminated", doc([]byte{0x0A, 'a', 'b'})},
		{"string length zero", "string length 0", doc(el(0x02, "s", i32(0), []byte{0}))},
		{"string length negative", "string length -5", doc(el(0x02, "s", i32(-5), []byte("abc\x00")))},
		{"string length too long", "string length 9", doc(el(0x02, "s", i32(9), []byte("abc\x00")))},
		{"string length too short", "string not terminated", doc(el(0x02, "s", i32(2), []byte("abc\x00")))},
		{"string length truncated", "string length truncated", doc(el(0x02, "s", []byte{1, 0}))},
		{"symbol length lies", "string length 100", doc(el(0x0E, "s", i32(100), []byte("a\x00")))},
		{"nested length too long", "document length", doc(el(0x03, "d", patchLen(valid, 0, int32(len(valid)+1))))},
		{"nested length too short", "document length 4", doc(el(0x03, "d", patchLen(doc(), 0, 4)))},
		{"nested length negative", "document length -1", doc(el(0x04, "d", patchLen(valid, 0, -1)))},
		{"nested length skips a field", "document does not end", doc(el(0x03, "d", patchLen(valid, 0, 5)))},
		{"nested not terminated", "document does not end", doc(el(0x03, "d", append(patchLen(valid, 0, int32(len(valid)))[:len(valid)-1], 7)))},
		{"binary length negative", "binary length -1", doc(el(0x05, "b", i32(-1), []byte{0}))},
		{"binary length too long", "binary length 5", doc(el(0x05, "b", i32(5), []byte{0}, []byte("abc")))},
		{"binary header truncated", "binary header truncated", doc(el(0x05, "b", i32(0)))},
		{"old binary inner length too long", "inner length 4", doc(el(0x05, "b", i32(7), []byte{2}, i32(4), []byte("abc")))},
		{"old binary inner length too short", "inner length 2", doc(el(0x05, "b", i32(7), []byte{2}, i32(2), []byte("abc")))},
		{"old binary inner length negative", "inner length -1", doc(el(0x05, "b", i32(7), []byte{2}, i32(-1), []byte("abc")))},
		{"regex pattern not terminated", "cstring not terminated", doc(el(0x0B, "r", []byte("abc")))},
		{"regex options not terminated", "cstring not terminated", doc(el(0x0B, "r", cstr("abc"), []byte("i")))},
		{"dbpointer truncated", "needs 12 bytes", doc(el(0x0C, "p", str("ns"), make([]byte, 11)))},
		{"dbpointer string lies", "string length", doc(el(0x0C, "p", i32(40), []byte("ns\x00"), make([]byte, 12)))},
		{"cws total too big", "code with scope length", cws(100, str("x"), scope)},
		{"cws total too small", "code with scope length 13", cws(13, str("x"), scope)},
		{"cws total does not match parts", "does not match its parts", cws(4+6+5+1, str("x"), append(bytes.Clone(scope), 0))},
		{"cws code length lies", "string length", cws(4+6+5, cat(i32(50), []byte("x\x00")), scope)},
		{"cws code not terminated", "string not terminated", cws(4+6+5, cat(i32(2), []byte("xy")), scope)},
		{"cws scope overruns", "document length", cws(4+6+5, str("x"), patchLen(scope, 0, 6))},
		{"cws truncated", "code with scope length truncated", doc(el(0x0F, "c", []byte{1}))},
		{"too deep", "nesting deeper than 200", nestedDocs(bsonx.MaxDepth+1, false)},
		{"too deep via arrays", "nesting deeper than 200", nestedDocs(bsonx.MaxDepth+1, true)},
		{"too deep via code with scope", "nesting deeper than 200", deepCWS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bsonx.Decode(tc.raw)
			if err == nil {
				t.Fatalf("Decode(%x) = %v, want error", tc.raw, got)
			}
			if got != nil {
				t.Errorf("Decode returned %v with its error", got)
			}
			me, ok := mongoerr.As(err)
			if !ok || me.Code != mongoerr.InvalidBSON || !strings.Contains(me.Msg, tc.want) {
				t.Fatalf("Decode(%x) error = %v, want InvalidBSON containing %q", tc.raw, err, tc.want)
			}
		})
	}
}

// TestTruncations cuts a document with every type at each length, fixing up
// the length prefix: Decode must not panic, and whatever it accepts must
// equal the driver's result. All cuts of this document are in fact invalid.
func TestTruncations(t *testing.T) {
	full := handCases(t)[1].raw
	for n := 0; n < len(full); n++ {
		cut := bytes.Clone(full[:n])
		if n >= 4 {
			cut = patchLen(cut, 0, int32(n))
		}
		if got, err := bsonx.Decode(cut); err == nil {
			t.Fatalf("cut at %d accepted: %v", n, got)
		}
	}
}

// TestStricterThanDriver pins the malformed inputs the driver accepts and
// Decode rejects, as the package documentation lists them.
func TestStricterThanDriver(t *testing.T) {
	cases := map[string][]byte{
		"too deep": nestedDocs(bsonx.MaxDepth+1, true),
		// The driver reads the two bytes the inner length promises, then
		// takes the rest of the payload for a null element named "k".
		"old binary inner length too short": doc(el(0x05, "b", i32(9), []byte{2}, i32(2), []byte("ab\x0ak\x00"))),
		"code not terminated":               doc(el(0x0F, "c", i32(4+6+5), i32(2), []byte("xy"), doc())),
	}
	for name, raw := range cases {
		if _, err := driverDecode(raw); err != nil {
			t.Errorf("%s: the driver now rejects it (%v); update the package documentation", name, err)
		}
		if _, err := bsonx.Decode(raw); err == nil {
			t.Errorf("%s: Decode accepted it", name)
		}
	}
}
