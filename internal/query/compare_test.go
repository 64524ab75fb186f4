package query

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func dec(t testing.TB, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("ParseDecimal128(%q): %v", s, err)
	}
	return d
}

func oid(last byte) bson.ObjectID {
	var o bson.ObjectID
	o[11] = last
	return o
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// orderedGroups lists values in ascending MongoDB order; the values inside
// one group are equal to each other.
func orderedGroups(t testing.TB) [][]any {
	d := func(s string) any { return dec(t, s) }
	return [][]any{
		{bson.MinKey{}},
		{bson.Undefined{}},
		{nil, bson.Null{}},
		{math.NaN(), -math.NaN(), d("NaN"), d("-NaN")},
		{math.Inf(-1), d("-Infinity")},
		{d("-9.999999999999999999999999999999999E+6144")},
		{d("-1E+400")},
		{-math.MaxFloat64},
		{int64(math.MinInt64), -twoTo63, d("-9223372036854775808")},
		{int64(math.MinInt64 + 1), d("-9223372036854775807")},
		{int64(-(1 << 53) - 1), d("-9007199254740993")},
		{int64(-(1 << 53)), -float64(1 << 53)},
		{-1.5, d("-1.5"), d("-15E-1")},
		{d("-1.000000000000000000000000000000001")},
		{int32(-1), int64(-1), -1.0, d("-1"), d("-1.000"), -1},
		{-0.1},
		{d("-0.1"), d("-0.10")},
		{d("-1E-400")},
		{int32(0), int64(0), 0.0, math.Copysign(0, -1), d("0"), d("-0"), d("0E+10"), d("-0E-20")},
		{d("1E-6176")},
		{d("1E-400")},
		{math.SmallestNonzeroFloat64},
		{d("1E-320")},
		{d("0.1")},
		{0.1},
		{int32(1), int64(1), 1.0, d("1"), d("1.0"), d("1E0"), d("0.1E1"), uint8(1), 1},
		{d("1.000000000000000000000000000000001")},
		{math.Nextafter(1, 2)},
		{1.5, d("1.5")},
		{int32(math.MaxInt32), float64(math.MaxInt32)},
		{int64(1 << 53), float64(1 << 53), d("9007199254740992")},
		{int64(1<<53 + 1), d("9007199254740993"), d("9.007199254740993E+15")},
		{int64(1<<53 + 2), float64(1<<53 + 2)},
		{int64(1<<62 + 1)},
		{int64(math.MaxInt64 - 1)},
		{int64(math.MaxInt64), d("9223372036854775807")},
		{twoTo63, d("9223372036854775808"), uint64(1 << 63)},
		{d("9223372036854775809")},
		{d("1E+300")},
		{1e300}, // the double nearest 10^300 is above it
		{math.MaxFloat64},
		{d("1E+400")},
		{d("9.999999999999999999999999999999999E+6144")},
		{math.Inf(1), d("Infinity")},
		{"", bson.Symbol("")},
		{"\x00"},
		{"\x00\x00"},
		{"\x00a"},
		{"\x01"},
		{"a", bson.Symbol("a")},
		{"a\x00"},
		{"a\x00b"},
		{"ab"},
		{"b"},
		{"\xff"},
		{"\xff\xff"},
		{bson.D{}},
		{bson.D{{Key: "b", Value: bson.MinKey{}}}},
		{bson.D{{Key: "a", Value: nil}}},
		{bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "a", Value: 1.0}}},
		{bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(1)}}},
		{bson.D{{Key: "a", Value: int32(2)}}},
		{bson.D{{Key: "b", Value: int32(1)}}},
		{bson.D{{Key: "a", Value: "x"}}},
		{bson.D{{Key: "a", Value: bson.D{}}}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}}}},
		{bson.D{{Key: "a", Value: bson.A{}}}},
		{bson.D{{Key: "a", Value: bson.A{int32(1)}}}, bson.D{{Key: "a", Value: []any{1.0}}}},
		{bson.A{}, []any{}},
		{bson.A{bson.MinKey{}}},
		{bson.A{nil}},
		{bson.A{int32(1)}, bson.A{d("1.0")}},
		{bson.A{int32(1), int32(2)}},
		{bson.A{int32(2)}},
		{bson.A{"a"}},
		{bson.A{bson.D{}}},
		{bson.A{bson.A{}}},
		{bson.A{bson.A{int32(1)}}},
		{bson.Binary{Subtype: 0, Data: nil}, bson.Binary{Subtype: 0, Data: []byte{}}},
		{bson.Binary{Subtype: 5, Data: nil}},
		{bson.Binary{Subtype: 0, Data: []byte{0}}},
		{bson.Binary{Subtype: 0, Data: []byte{1}}},
		{bson.Binary{Subtype: 1, Data: []byte{0}}},
		{bson.Binary{Subtype: 0, Data: []byte{0, 0}}},
		{oid(0)},
		{oid(1)},
		{bson.ObjectID{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
		{false},
		{true},
		{bson.DateTime(math.MinInt64)},
		{bson.DateTime(-1)},
		{bson.DateTime(0)},
		{bson.DateTime(1)},
		{bson.DateTime(math.MaxInt64)},
		{bson.Timestamp{}},
		{bson.Timestamp{T: 0, I: 1}},
		{bson.Timestamp{T: 1, I: 0}},
		{bson.Timestamp{T: math.MaxUint32, I: math.MaxUint32}},
		{bson.Regex{}},
		{bson.Regex{Options: "i"}},
		{bson.Regex{Pattern: "a"}},
		{bson.Regex{Pattern: "a", Options: "i"}},
		{bson.Regex{Pattern: "b"}},
		{bson.DBPointer{DB: "z", Pointer: oid(9)}},
		{bson.DBPointer{DB: "aa", Pointer: oid(0)}},
		{bson.DBPointer{DB: "aa", Pointer: oid(1)}},
		{bson.DBPointer{DB: "ab", Pointer: oid(0)}},
		{bson.JavaScript("")},
		{bson.JavaScript("a")},
		{bson.JavaScript("b")},
		{bson.CodeWithScope{Code: "a", Scope: bson.D{}}, bson.CodeWithScope{Code: "a"}},
		{bson.CodeWithScope{Code: "a", Scope: bson.D{{Key: "x", Value: int32(1)}}}},
		{bson.CodeWithScope{Code: "b", Scope: bson.D{}}},
		{bson.MaxKey{}},
	}
}

func TestCompareAndKeysFollowTable(t *testing.T) {
	groups := orderedGroups(t)
	type item struct {
		group int
		v     any
		key   []byte
	}
	var items []item
	for g, vs := range groups {
		for _, v := range vs {
			items = append(items, item{g, v, AppendKey(nil, v)})
		}
	}
	for _, a := range items {
		for _, b := range items {
			want := sign(a.group - b.group)
			if got := Compare(a.v, b.v); got != want {
				t.Errorf("Compare(%#v, %#v) = %d, want %d", a.v, b.v, got, want)
			}
			if got := sign(bytes.Compare(a.key, b.key)); got != want {
				t.Errorf("keys of %#v and %#v compare %d, want %d (%x vs %x)", a.v, b.v, got, want, a.key, b.key)
			}
		}
	}
}

func TestKeysArePrefixFree(t *testing.T) {
	var keys [][]byte
	for _, vs := range orderedGroups(t) {
		keys = append(keys, AppendKey(nil, vs[0]))
	}
	for i, a := range keys {
		for j, b := range keys {
			if i != j && bytes.HasPrefix(b, a) {
				t.Errorf("key %x is a prefix of %x", a, b)
			}
		}
	}
}

func TestCompoundKeysOrderFieldByField(t *testing.T) {
	// Concatenated keys must order by the first value, then the second,
	// even when the first values' keys have different lengths.
	firsts := []any{"a", "a\x00", "ab", int32(1), 1.5, dec(t, "1.000000000000000000000000000000001"), int64(1<<53 + 1)}
	seconds := []any{nil, int32(-1), "zzzz", bson.MaxKey{}}
	type pair struct{ a, b any }
	var pairs []pair
	for _, x := range firsts {
		for _, y := range seconds {
			pairs = append(pairs, pair{x, y})
		}
	}
	for _, p := range pairs {
		for _, q := range pairs {
			want := Compare(p.a, q.a)
			if want == 0 {
				want = Compare(p.b, q.b)
			}
			kp := AppendKey(AppendKey(nil, p.a), p.b)
			kq := AppendKey(AppendKey(nil, q.a), q.b)
			if got := sign(bytes.Compare(kp, kq)); got != want {
				t.Errorf("(%v,%v) vs (%v,%v): keys compare %d, want %d", p.a, p.b, q.a, q.b, got, want)
			}
		}
	}
}

// ratOf is the exact value of a finite number, as an independent reference.
func ratOf(t testing.TB, v any) *big.Rat {
	switch x := v.(type) {
	case int32:
		return new(big.Rat).SetInt64(int64(x))
	case int64:
		return new(big.Rat).SetInt64(x)
	case float64:
		return new(big.Rat).SetFloat64(x)
	case bson.Decimal128:
		sig, exp, err := x.BigInt()
		if err != nil {
			t.Fatal(err)
		}
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp >= 0 {
			return new(big.Rat).SetInt(sig.Mul(sig, p))
		}
		return new(big.Rat).SetFrac(sig, p)
	}
	t.Fatalf("not a number: %#v", v)
	return nil
}

func randomNumber(t testing.TB, r *rand.Rand) any {
	interesting := []int64{0, 1, -1, 1 << 53, 1<<53 + 1, -(1<<53 + 1), math.MaxInt64, math.MinInt64, 1 << 62, 10, 100, 999999999999999999}
	base := interesting[r.IntN(len(interesting))]
	if r.IntN(2) == 0 {
		base = r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			base = -base
		}
	}
	base += int64(r.IntN(5) - 2)
	switch r.IntN(5) {
	case 0:
		return int32(base)
	case 1:
		return base
	case 2:
		return float64(base) * math.Pow(2, float64(r.IntN(40)-20))
	case 3:
		f := float64(base)
		for n := r.IntN(3); n > 0; n-- {
			f = math.Nextafter(f, math.Inf(r.IntN(2)*2-1))
		}
		return f
	}
	exp := r.IntN(60) - 30
	if r.IntN(10) == 0 {
		exp = r.IntN(1200) - 600
	}
	return dec(t, fmt.Sprintf("%dE%d", base, exp))
}

func TestNumbersCompareExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nums := make([]any, 3000)
	for i := range nums {
		nums[i] = randomNumber(t, r)
	}
	for i := 0; i < len(nums); i++ {
		a := nums[i]
		for _, b := range []any{nums[(i+1)%len(nums)], nums[r.IntN(len(nums))], a} {
			want := ratOf(t, a).Cmp(ratOf(t, b))
			if got := Compare(a, b); got != want {
				t.Fatalf("Compare(%v %T, %v %T) = %d, want %d", a, a, b, b, got, want)
			}
			if got := sign(bytes.Compare(AppendKey(nil, a), AppendKey(nil, b))); got != want {
				t.Fatalf("keys of %v %T, %v %T compare %d, want %d", a, a, b, b, got, want)
			}
		}
	}
}

// randomValue builds values of every type, small enough to collide often.
func randomValue(t testing.TB, r *rand.Rand, depth int) any {
	switch n := r.IntN(24); {
	case n < 6:
		return randomNumber(t, r)
	case n < 9:
		return []string{"", "a", "a\x00", "\x00", "ab", "b", "é"}[r.IntN(7)]
	case n == 9:
		return bson.Symbol([]string{"", "a", "b"}[r.IntN(3)])
	case n == 10 && depth > 0:
		d := bson.D{}
		for i := r.IntN(3); i > 0; i-- {
			d = append(d, bson.E{Key: []string{"a", "b", ""}[r.IntN(3)], Value: randomValue(t, r, depth-1)})
		}
		return d
	case n == 11 && depth > 0:
		a := bson.A{}
		for i := r.IntN(3); i > 0; i-- {
			a = append(a, randomValue(t, r, depth-1))
		}
		return a
	case n == 12:
		return bson.Binary{Subtype: byte(r.IntN(2)), Data: []byte("xy")[:r.IntN(3)]}
	case n == 13:
		return oid(byte(r.IntN(3)))
	case n == 14:
		return r.IntN(2) == 0
	case n == 15:
		return bson.DateTime(r.Int64N(5) - 2)
	case n == 16:
		return bson.Timestamp{T: uint32(r.IntN(2)), I: uint32(r.IntN(2))}
	case n == 17:
		return bson.Regex{Pattern: []string{"a", "b"}[r.IntN(2)], Options: []string{"", "i"}[r.IntN(2)]}
	case n == 18:
		return bson.DBPointer{DB: []string{"a", "bb"}[r.IntN(2)], Pointer: oid(byte(r.IntN(2)))}
	case n == 19:
		return bson.JavaScript([]string{"a", "b"}[r.IntN(2)])
	case n == 20 && depth > 0:
		return bson.CodeWithScope{Code: "a", Scope: bson.D{{Key: "x", Value: randomValue(t, r, depth-1)}}}
	case n == 21:
		return []any{bson.MinKey{}, bson.MaxKey{}}[r.IntN(2)]
	case n == 22:
		return bson.Undefined{}
	}
	return nil
}

func TestRandomValuesKeysAgreeWithCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]any, 600)
	for i := range vals {
		vals[i] = randomValue(t, r, 3)
	}
	keys := make([][]byte, len(vals))
	for i, v := range vals {
		keys[i] = AppendKey(nil, v)
	}
	for i := range vals {
		for j := range vals {
			c := Compare(vals[i], vals[j])
			if k := sign(bytes.Compare(keys[i], keys[j])); c != k {
				t.Fatalf("Compare(%#v, %#v) = %d but keys compare %d", vals[i], vals[j], c, k)
			}
			if back := Compare(vals[j], vals[i]); back != -c {
				t.Fatalf("Compare not antisymmetric on %#v, %#v", vals[i], vals[j])
			}
		}
	}

	// Sorting by Compare and sorting by key bytes give the same order.
	byCompare := make([]int, len(vals))
	byKey := make([]int, len(vals))
	for i := range vals {
		byCompare[i], byKey[i] = i, i
	}
	sort.SliceStable(byCompare, func(a, b int) bool { return Compare(vals[byCompare[a]], vals[byCompare[b]]) < 0 })
	sort.SliceStable(byKey, func(a, b int) bool { return bytes.Compare(keys[byKey[a]], keys[byKey[b]]) < 0 })
	for i := range byCompare {
		if byCompare[i] != byKey[i] {
			t.Fatalf("orders differ at %d: %#v vs %#v", i, vals[byCompare[i]], vals[byKey[i]])
		}
	}
}

func TestAppendKeyAppends(t *testing.T) {
	prefix := []byte("prefix")
	got := AppendKey(append([]byte(nil), prefix...), "x")
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], AppendKey(nil, "x")) {
		t.Fatalf("AppendKey did not append: %x", got)
	}
}

func TestIndexKey(t *testing.T) {
	doc := bson.D{
		{Key: "a", Value: int32(5)},
		{Key: "b", Value: bson.D{{Key: "c", Value: "x"}, {Key: "arr", Value: bson.A{int32(1)}}}},
		{Key: "s", Value: "scalar"},
	}
	cases := []struct {
		fields []string
		want   []byte
		ok     bool
	}{
		{[]string{"a"}, AppendKey(nil, 5.0), true},
		{[]string{"a", "b.c"}, AppendKey(AppendKey(nil, int64(5)), "x"), true},
		{[]string{"missing"}, AppendKey(nil, nil), true},
		{[]string{"s.x"}, AppendKey(nil, nil), true},
		{[]string{"b.missing", "a"}, AppendKey(AppendKey(nil, nil), 5), true},
		{[]string{"b.arr"}, nil, false},
		{[]string{"a", "b.arr"}, nil, false},
		{[]string{"b"}, AppendKey(nil, doc[1].Value), true},
	}
	for _, c := range cases {
		got, ok := IndexKey(doc, c.fields)
		if ok != c.ok || !bytes.Equal(got, c.want) {
			t.Errorf("IndexKey(%v) = %x, %v; want %x, %v", c.fields, got, ok, c.want, c.ok)
		}
	}
	arrayDoc := bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: int32(1)}}}}}
	if _, ok := IndexKey(arrayDoc, []string{"a.b"}); ok {
		t.Error("a path through an array of documents must be multikey")
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xFF}, []byte{2}},
		{[]byte{0xFF, 0xFF}, nil},
	}
	for _, c := range cases {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}
