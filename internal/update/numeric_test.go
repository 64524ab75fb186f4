package update

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestArith(t *testing.T) {
	cases := []struct {
		name   string
		x, y   any
		mul    bool
		want   any
		failed bool
	}{
		{name: "int32 add", x: int32(2), y: int32(3), want: int32(5)},
		{name: "int32 mul", x: int32(-2), y: int32(3), mul: true, want: int32(-6)},
		{name: "int32 mul overflow", x: int32(math.MaxInt32), y: int32(2), mul: true, want: int64(math.MaxInt32) * 2},
		{name: "int64 add", x: int64(2), y: int32(3), want: int64(5)},
		{name: "int64 add overflow", x: int64(math.MaxInt64), y: int64(1), failed: true},
		{name: "int64 add underflow", x: int64(math.MinInt64), y: int32(-1), failed: true},
		{name: "int64 add to limit", x: int64(math.MaxInt64 - 1), y: int32(1), want: int64(math.MaxInt64)},
		{name: "int64 mul overflow", x: int64(math.MaxInt64/2 + 1), y: int32(2), mul: true, failed: true},
		{name: "int64 mul by zero", x: int64(math.MinInt64), y: int32(0), mul: true, want: int64(0)},
		{name: "double", x: int64(1), y: 0.25, want: 1.25},
		{name: "double mul", x: 3.0, y: int32(2), mul: true, want: 6.0},
		{name: "double nan", x: math.NaN(), y: int32(1), want: math.NaN()},
		{name: "decimal add", x: mustDec("1.10"), y: mustDec("2.205"), want: mustDec("3.305")},
		{name: "decimal mul", x: mustDec("1.5"), y: mustDec("-2"), mul: true, want: mustDec("-3.0")},
		{name: "decimal rounds to 34 digits", x: mustDec("9999999999999999999999999999999999"), y: int32(1),
			want: mustDec("1.000000000000000000000000000000000E+34")},
		{name: "decimal rounds half to even", x: mustDec("1000000000000000000000000000000000"), y: mustDec("0.5"),
			want: mustDec("1000000000000000000000000000000000")},
		{name: "decimal rounds half up to even", x: mustDec("1000000000000000000000000000000001"), y: mustDec("0.5"),
			want: mustDec("1000000000000000000000000000000002")},
		{name: "decimal with int64", x: int64(math.MaxInt64), y: mustDec("1"), want: mustDec("9223372036854775808")},
		{name: "decimal nan", x: mustDec("NaN"), y: int32(1), want: mustDec("NaN")},
		{name: "decimal inf minus inf", x: mustDec("Infinity"), y: mustDec("-Infinity"), want: mustDec("NaN")},
		{name: "decimal inf times zero", x: mustDec("Infinity"), y: int32(0), mul: true, want: mustDec("NaN")},
		{name: "decimal inf times negative", x: mustDec("Infinity"), y: int32(-2), mul: true, want: mustDec("-Infinity")},
		{name: "decimal with double infinity", x: mustDec("1"), y: math.Inf(1), want: mustDec("Infinity")},
		{name: "decimal overflow", x: mustDec("9E+6144"), y: int32(10), mul: true, want: mustDec("Infinity")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := arith(tc.x, tc.y, tc.mul)
			if tc.failed {
				if ok {
					t.Fatalf("want overflow, got %#v", got)
				}
				return
			}
			if !ok {
				t.Fatal("unexpected overflow")
			}
			if !identical(got, tc.want) {
				t.Fatalf("got %s (%T), want %s (%T)", formatValue(got), got, formatValue(tc.want), tc.want)
			}
		})
	}
}

func mustDec(s string) bson.Decimal128 {
	v, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestFormatValue(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{int32(5), "5"},
		{int64(-5), "-5"},
		{2.0, "2.0"},
		{2.5, "2.5"},
		{"s", `"s"`},
		{nil, "null"},
		{bson.D{}, "{}"},
		{bson.A{}, "[]"},
		{bson.D{{Key: "a", Value: bson.A{int32(1), "x"}}}, `{ a: [ 1, "x" ] }`},
	}
	for _, tc := range cases {
		if got := formatValue(tc.v); got != tc.want {
			t.Errorf("formatValue(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestDecimalSum(t *testing.T) {
	dec := func(s string) bson.Decimal128 {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var s DecimalSum
	for range 10 {
		s.Add(dec("0.1"))
	}
	if got := s.Value().String(); got != "1.0" {
		t.Errorf("ten times 0.1 = %s, want 1.0 (exact)", got)
	}
	s.Add(int32(2))
	s.Add(int64(3))
	s.Add(0.5)
	if got := s.Value().String(); got != "6.500000000000000" { // the double counts at 15 digits, as in MongoDB
		t.Errorf("sum = %s, want 6.500000000000000", got)
	}
	if got := s.Mean(3).String(); got != "2.166666666666666666666666666666667" {
		t.Errorf("6.5/3 = %s, want 34 digits rounded half to even", got)
	}
	var zero DecimalSum
	if got := zero.Value().String(); got != "0" {
		t.Errorf("empty sum = %s", got)
	}
}

func TestDecimalMeanExact(t *testing.T) {
	var s DecimalSum
	d, _ := bson.ParseDecimal128("3.5")
	s.Add(d)
	if got := s.Mean(2).String(); got != "1.75" {
		t.Errorf("3.5/2 = %s, want 1.75", got)
	}
	if got := s.Mean(7).String(); got != "0.5" {
		t.Errorf("3.5/7 = %s, want 0.5", got)
	}
}
