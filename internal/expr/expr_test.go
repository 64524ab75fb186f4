package expr

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func dec(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

// eval parses and evaluates e against doc.
func eval(t *testing.T, e any, doc bson.D) (any, error) {
	t.Helper()
	x, err := Parse(e, NewScope(nil))
	if err != nil {
		return nil, err
	}
	return x.Eval(NewCtx(doc, nil, bson.DateTime(0)))
}

var testDoc = bson.D{
	{Key: "i", Value: int32(7)},
	{Key: "l", Value: int64(1) << 40},
	{Key: "f", Value: 2.5},
	{Key: "d", Value: dec("1.1")},
	{Key: "s", Value: "héllo"},
	{Key: "n", Value: nil},
	{Key: "a", Value: bson.A{int32(1), int32(2), int32(3)}},
	{Key: "o", Value: bson.A{bson.D{{Key: "x", Value: int32(1)}}, int32(5), bson.D{{Key: "y", Value: int32(2)}}, bson.D{{Key: "x", Value: bson.A{int32(8)}}}}},
	{Key: "t", Value: bson.DateTime(1709214330123)}, // 2024-02-29T13:45:30.123Z
}

// Results are compared with their BSON type: 3 as int32 is not 3 as int64.
func TestExpressions(t *testing.T) {
	cases := []struct {
		name string
		expr any
		want any
	}{
		{"int32 add", bson.D{{Key: "$add", Value: bson.A{int32(1), int32(2)}}}, int32(3)},
		{"setUnion sorted and distinct", bson.D{{Key: "$setUnion", Value: bson.A{bson.A{int32(3), "x", int32(1)}, bson.A{1.0, int32(2)}}}}, bson.A{int32(1), int32(2), int32(3), "x"}},
		{"setUnion of null", bson.D{{Key: "$setUnion", Value: bson.A{"$a", "$zz"}}}, nil},
		{"setIntersection", bson.D{{Key: "$setIntersection", Value: bson.A{"$a", bson.A{int32(3), int32(1), int32(9), int32(1)}}}}, bson.A{int32(1), int32(3)}},
		{"setIntersection of none", bson.D{{Key: "$setIntersection", Value: bson.A{}}}, bson.A{}},
		{"setDifference keeps order", bson.D{{Key: "$setDifference", Value: bson.A{bson.A{int32(3), int32(1), int32(3), int32(5)}, bson.A{int32(1)}}}}, bson.A{int32(3), int32(5)}},
		{"setDifference of null", bson.D{{Key: "$setDifference", Value: bson.A{"$n", "$a"}}}, nil},
		{"setEquals ignores repeats and order", bson.D{{Key: "$setEquals", Value: bson.A{"$a", bson.A{int32(3), int32(2), int32(1), int64(1)}}}}, true},
		{"setEquals differs", bson.D{{Key: "$setEquals", Value: bson.A{"$a", bson.A{int32(1)}}}}, false},
		{"setIsSubset", bson.D{{Key: "$setIsSubset", Value: bson.A{bson.A{int32(2), int32(2)}, "$a"}}}, true},
		{"setIsSubset not", bson.D{{Key: "$setIsSubset", Value: bson.A{bson.A{int32(4)}, "$a"}}}, false},
		{"anyElementTrue", bson.D{{Key: "$anyElementTrue", Value: bson.A{bson.A{int32(0), nil, true}}}}, true},
		{"anyElementTrue empty", bson.D{{Key: "$anyElementTrue", Value: bson.A{bson.A{}}}}, false},
		{"allElementsTrue", bson.D{{Key: "$allElementsTrue", Value: bson.A{bson.A{int32(1), "x", bson.A{}}}}}, true},
		{"allElementsTrue false", bson.D{{Key: "$allElementsTrue", Value: bson.A{bson.A{int32(1), int32(0)}}}}, false},
		{"allElementsTrue empty", bson.D{{Key: "$allElementsTrue", Value: bson.A{bson.A{}}}}, true},
		{"dateAdd month clamps", bson.D{{Key: "$dateAdd", Value: bson.D{{Key: "startDate", Value: bson.DateTime(1612051200000)}, {Key: "unit", Value: "month"}, {Key: "amount", Value: int32(1)}}}}, bson.DateTime(1614470400000)}, // 2021-01-31 -> 2021-02-28
		{"dateSubtract hours", bson.D{{Key: "$dateSubtract", Value: bson.D{{Key: "startDate", Value: "$t"}, {Key: "unit", Value: "hour"}, {Key: "amount", Value: int64(2)}}}}, bson.DateTime(1709214330123 - 7200000)},
		{"dateDiff years crossed", bson.D{{Key: "$dateDiff", Value: bson.D{{Key: "startDate", Value: bson.DateTime(1609455600000)}, {Key: "endDate", Value: bson.DateTime(1609462800000)}, {Key: "unit", Value: "year"}}}}, int64(1)}, // 2020-12-31T23:00Z -> 2021-01-01T01:00Z
		{"dateDiff of null", bson.D{{Key: "$dateDiff", Value: bson.D{{Key: "startDate", Value: "$n"}, {Key: "endDate", Value: "$t"}, {Key: "unit", Value: "day"}}}}, nil},
		{"regexFind", bson.D{{Key: "$regexFind", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "l(l)?"}}}}, bson.D{{Key: "match", Value: "ll"}, {Key: "idx", Value: int32(2)}, {Key: "captures", Value: bson.A{"l"}}}},
		{"replaceAll", bson.D{{Key: "$replaceAll", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "find", Value: "l"}, {Key: "replacement", Value: "L"}}}}, "héLLo"},
		{"dateTrunc week from Monday", bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: bson.DateTime(1615988825000)}, {Key: "unit", Value: "week"}, {Key: "startOfWeek", Value: "mon"}}}}, bson.DateTime(1615766400000)},
		{"dateTrunc 5 months", bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: bson.DateTime(1615988825000)}, {Key: "unit", Value: "month"}, {Key: "binSize", Value: int32(5)}}}}, bson.DateTime(1604188800000)},
		{"dateTrunc 7 days", bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: bson.DateTime(1615988825000)}, {Key: "unit", Value: "day"}, {Key: "binSize", Value: int64(7)}}}}, bson.DateTime(1615593600000)},
		{"let rebinds CURRENT", bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: bson.D{{Key: "CURRENT", Value: bson.D{{Key: "i", Value: int32(40)}}}}}, {Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$i", "$$ROOT.i"}}}}}}}, int32(47)},
		{"dateFromString with format", bson.D{{Key: "$dateFromString", Value: bson.D{{Key: "dateString", Value: "17.03.2021"}, {Key: "format", Value: "%d.%m.%Y"}}}}, bson.DateTime(1615939200000)},
		{"dateFromString onError", bson.D{{Key: "$dateFromString", Value: bson.D{{Key: "dateString", Value: "x"}, {Key: "onError", Value: int32(0)}}}}, int32(0)},
		{"dateFromParts carries", bson.D{{Key: "$dateFromParts", Value: bson.D{{Key: "year", Value: int32(2020)}, {Key: "month", Value: int32(14)}, {Key: "day", Value: int32(0)}}}}, bson.DateTime(1612051200000)}, // 2021-01-31
		{"dateToParts", bson.D{{Key: "$dateToParts", Value: bson.D{{Key: "date", Value: "$t"}}}}, bson.D{{Key: "year", Value: int32(2024)}, {Key: "month", Value: int32(2)}, {Key: "day", Value: int32(29)}, {Key: "hour", Value: int32(13)}, {Key: "minute", Value: int32(45)}, {Key: "second", Value: int32(30)}, {Key: "millisecond", Value: int32(123)}}},
		{"dateAdd hours past a Duration's range", bson.D{{Key: "$dateAdd", Value: bson.D{{Key: "startDate", Value: bson.DateTime(0)}, {Key: "unit", Value: "hour"}, {Key: "amount", Value: int64(10_000_000)}}}}, bson.DateTime(36_000_000_000_000)},
		{"isoWeek", bson.D{{Key: "$isoWeek", Value: bson.DateTime(1704067200000)}}, int32(1)},            // Monday 2024-01-01
		{"isoWeekYear", bson.D{{Key: "$isoWeekYear", Value: bson.DateTime(1704067199000)}}, int32(2023)}, // Sunday 2023-12-31
		{"isoDayOfWeek Sunday", bson.D{{Key: "$isoDayOfWeek", Value: bson.DateTime(1704067199000)}}, int32(7)},
		{"isoDayOfWeek Thursday", bson.D{{Key: "$isoDayOfWeek", Value: "$t"}}, int32(4)},
		{"int32 overflow widens to int64", bson.D{{Key: "$add", Value: bson.A{int32(math.MaxInt32), int32(1)}}}, int64(math.MaxInt32) + 1},
		{"int64 stays int64", bson.D{{Key: "$add", Value: bson.A{int64(1), int32(1)}}}, int64(2)},
		{"int64 overflow becomes double", bson.D{{Key: "$add", Value: bson.A{int64(math.MaxInt64), int32(1)}}}, float64(math.MaxInt64) + 1},
		{"double wins over ints", bson.D{{Key: "$add", Value: bson.A{"$i", "$f"}}}, 9.5},
		{"decimal wins over double", bson.D{{Key: "$add", Value: bson.A{"$d", int32(1)}}}, dec("2.1")},
		{"null in add", bson.D{{Key: "$add", Value: bson.A{int32(1), "$n"}}}, nil},
		{"missing in add", bson.D{{Key: "$add", Value: bson.A{int32(1), "$zz"}}}, nil},
		{"date plus millis", bson.D{{Key: "$add", Value: bson.A{"$t", int32(877)}}}, bson.DateTime(1709214331000)},
		{"date minus date", bson.D{{Key: "$subtract", Value: bson.A{"$t", bson.DateTime(1709214330000)}}}, int64(123)},
		{"multiply overflow", bson.D{{Key: "$multiply", Value: bson.A{int64(math.MaxInt64), int32(2)}}}, float64(math.MaxInt64) * 2},
		{"multiply int32", bson.D{{Key: "$multiply", Value: bson.A{int32(6), int32(7)}}}, int32(42)},
		{"divide is double", bson.D{{Key: "$divide", Value: bson.A{int32(6), int32(4)}}}, 1.5},
		{"divide decimal exact", bson.D{{Key: "$divide", Value: bson.A{dec("1"), int32(8)}}}, dec("0.125")},
		{"divide decimal inexact", bson.D{{Key: "$divide", Value: bson.A{dec("2"), int32(3)}}}, dec("0.6666666666666666666666666666666667")},
		{"mod int32", bson.D{{Key: "$mod", Value: bson.A{int32(-7), int32(3)}}}, int32(-1)},
		{"mod long", bson.D{{Key: "$mod", Value: bson.A{int64(7), int32(3)}}}, int64(1)},
		{"abs int32 min widens", bson.D{{Key: "$abs", Value: int32(math.MinInt32)}}, int64(-math.MinInt32)},
		{"ceil decimal", bson.D{{Key: "$ceil", Value: dec("1.1")}}, dec("2")},
		{"floor int unchanged", bson.D{{Key: "$floor", Value: int32(3)}}, int32(3)},
		{"round half to even", bson.D{{Key: "$round", Value: bson.A{2.5}}}, 2.0},
		{"round places", bson.D{{Key: "$round", Value: bson.A{1.005, int32(2)}}}, 1.0},
		{"round negative places", bson.D{{Key: "$round", Value: bson.A{int32(1250), int32(-2)}}}, int32(1200)},
		{"trunc decimal", bson.D{{Key: "$trunc", Value: bson.A{dec("-1.289"), int32(1)}}}, dec("-1.2")},
		{"pow int", bson.D{{Key: "$pow", Value: bson.A{int32(3), int32(4)}}}, int32(81)},
		{"pow too big is double", bson.D{{Key: "$pow", Value: bson.A{int32(10), int32(30)}}}, 1e30},
		{"pow negative exponent", bson.D{{Key: "$pow", Value: bson.A{int32(2), int32(-1)}}}, 0.5},
		{"sqrt", bson.D{{Key: "$sqrt", Value: int32(9)}}, 3.0},
		{"sqrt decimal", bson.D{{Key: "$sqrt", Value: dec("2.25")}}, dec("1.500000000000000000000000000000000")},
		{"log", bson.D{{Key: "$log", Value: bson.A{int32(8), int32(2)}}}, 3.0},

		{"eq across numeric types", bson.D{{Key: "$eq", Value: bson.A{int32(1), dec("1.0")}}}, true},
		{"missing below null", bson.D{{Key: "$lt", Value: bson.A{"$zz", nil}}}, true},
		{"missing is not null", bson.D{{Key: "$eq", Value: bson.A{"$zz", nil}}}, false},
		{"type order", bson.D{{Key: "$gt", Value: bson.A{"a", int32(100)}}}, true},
		{"cmp", bson.D{{Key: "$cmp", Value: bson.A{"$i", int32(9)}}}, int32(-1)},

		{"and empty", bson.D{{Key: "$and", Value: bson.A{}}}, true},
		{"or coerces", bson.D{{Key: "$or", Value: bson.A{int32(0), ""}}}, true},
		{"not null", bson.D{{Key: "$not", Value: bson.A{nil}}}, true},
		{"cond lazy", bson.D{{Key: "$cond", Value: bson.A{false, bson.D{{Key: "$divide", Value: bson.A{1, 0}}}, "ok"}}}, "ok"},
		{"ifNull keeps missing last", bson.D{{Key: "$ifNull", Value: bson.A{"$n", "$zz"}}}, Missing},
		{"switch default", bson.D{{Key: "$switch", Value: bson.D{{Key: "branches", Value: bson.A{bson.D{{Key: "case", Value: false}, {Key: "then", Value: 1}}}}, {Key: "default", Value: "d"}}}}, "d"},

		{"path through array", "$o.x", bson.A{int32(1), bson.A{int32(8)}}},
		{"literal", bson.D{{Key: "$literal", Value: "$notapath"}}, "$notapath"},
		{"let", bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: bson.D{{Key: "v", Value: "$i"}}}, {Key: "in", Value: bson.D{{Key: "$multiply", Value: bson.A{"$$v", "$$v"}}}}}}}, int32(49)},
		{"root", "$$ROOT.i", int32(7)},
		{"remove", "$$REMOVE", Missing},

		{"concat", bson.D{{Key: "$concat", Value: bson.A{"a", "$s"}}}, "ahéllo"},
		{"substrCP", bson.D{{Key: "$substrCP", Value: bson.A{"$s", int32(1), int32(3)}}}, "éll"},
		{"toUpper ascii only", bson.D{{Key: "$toUpper", Value: "$s"}}, "HéLLO"},
		{"strLenCP", bson.D{{Key: "$strLenCP", Value: "$s"}}, int32(5)},
		{"indexOfCP", bson.D{{Key: "$indexOfCP", Value: bson.A{"$s", "l"}}}, int32(2)},
		{"indexOfBytes", bson.D{{Key: "$indexOfBytes", Value: bson.A{"$s", "l"}}}, int32(3)},
		{"indexOfBytes within end", bson.D{{Key: "$indexOfBytes", Value: bson.A{"abc", "bc", int32(0), int32(2)}}}, int32(-1)},
		{"rtrim", bson.D{{Key: "$rtrim", Value: bson.D{{Key: "input", Value: " a \n"}}}}, " a"},
		{"split", bson.D{{Key: "$split", Value: bson.A{"a-b", "-"}}}, bson.A{"a", "b"}},
		{"strcasecmp", bson.D{{Key: "$strcasecmp", Value: bson.A{"a", "B"}}}, int32(-1)},
		{"regexMatch null input", bson.D{{Key: "$regexMatch", Value: bson.D{{Key: "input", Value: "$n"}, {Key: "regex", Value: "x"}}}}, false},

		{"size", bson.D{{Key: "$size", Value: "$a"}}, int32(3)},
		{"arrayElemAt out of range", bson.D{{Key: "$arrayElemAt", Value: bson.A{"$a", int32(5)}}}, Missing},
		{"last", bson.D{{Key: "$last", Value: "$a"}}, int32(3)},
		{"slice", bson.D{{Key: "$slice", Value: bson.A{"$a", int32(-2), int32(1)}}}, bson.A{int32(2)}},
		{"range negative step", bson.D{{Key: "$range", Value: bson.A{int32(3), int32(0), int32(-1)}}}, bson.A{int32(3), int32(2), int32(1)}},
		{"filter limit", bson.D{{Key: "$filter", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "cond", Value: true}, {Key: "limit", Value: int32(2)}}}}, bson.A{int32(1), int32(2)}},
		{"map missing to null", bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "as", Value: "e"}, {Key: "in", Value: "$$e.nothing"}}}}, bson.A{nil, nil, nil}},
		{"reduce", bson.D{{Key: "$reduce", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "initialValue", Value: ""}, {Key: "in", Value: bson.D{{Key: "$concat", Value: bson.A{"$$value", "x"}}}}}}}, "xxx"},
		{"indexOfArray", bson.D{{Key: "$indexOfArray", Value: bson.A{"$a", 2.0}}}, int32(1)},

		{"year", bson.D{{Key: "$year", Value: "$t"}}, int32(2024)},
		{"dayOfWeek", bson.D{{Key: "$dayOfWeek", Value: "$t"}}, int32(5)},
		{"week", bson.D{{Key: "$week", Value: "$t"}}, int32(8)},
		{"hour in a time zone", bson.D{{Key: "$hour", Value: bson.D{{Key: "date", Value: "$t"}, {Key: "timezone", Value: "Asia/Tokyo"}}}}, int32(22)},
		{"dateToString", bson.D{{Key: "$dateToString", Value: bson.D{{Key: "date", Value: "$t"}, {Key: "format", Value: "%d/%m/%Y %j %u %V %%"}}}}, "29/02/2024 060 4 09 %"},
		{"dateToString onNull", bson.D{{Key: "$dateToString", Value: bson.D{{Key: "date", Value: "$zz"}, {Key: "onNull", Value: "none"}}}}, "none"},

		{"type missing", bson.D{{Key: "$type", Value: "$zz"}}, "missing"},
		{"toInt truncates", bson.D{{Key: "$toInt", Value: -2.9}}, int32(-2)},
		{"toLong of date", bson.D{{Key: "$toLong", Value: "$t"}}, int64(1709214330123)},
		{"toString double", bson.D{{Key: "$toString", Value: 0.1}}, "0.1"},
		{"toBool string", bson.D{{Key: "$toBool", Value: ""}}, true},
		{"toDate string", bson.D{{Key: "$toDate", Value: "2024-02-29T13:45:30.123Z"}}, bson.DateTime(1709214330123)},
		{"convert onError", bson.D{{Key: "$convert", Value: bson.D{{Key: "input", Value: "x"}, {Key: "to", Value: int32(16)}, {Key: "onError", Value: "bad"}}}}, "bad"},
		{"convert null to", bson.D{{Key: "$convert", Value: bson.D{{Key: "input", Value: int32(1)}, {Key: "to", Value: nil}}}}, nil},

		{"mergeObjects", bson.D{{Key: "$mergeObjects", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}, "$n", bson.D{{Key: "a", Value: int32(2)}, {Key: "b", Value: int32(3)}}}}}, bson.D{{Key: "a", Value: int32(2)}, {Key: "b", Value: int32(3)}}},
		{"arrayToObject later key wins", bson.D{{Key: "$arrayToObject", Value: bson.A{bson.A{bson.A{"k", int32(1)}, bson.A{"k", int32(2)}}}}}, bson.D{{Key: "k", Value: int32(2)}}},
		{"sum over an array", bson.D{{Key: "$sum", Value: "$a"}}, int32(6)},
		{"sum over arguments skips non-numbers", bson.D{{Key: "$sum", Value: bson.A{"$i", "$s", "$l"}}}, int64(1)<<40 + 7},
		{"sum of nothing", bson.D{{Key: "$sum", Value: "$zz"}}, int32(0)},
		{"avg", bson.D{{Key: "$avg", Value: "$a"}}, 2.0},
		{"avg of none", bson.D{{Key: "$avg", Value: bson.A{"$s"}}}, nil},
		{"max in BSON order", bson.D{{Key: "$max", Value: bson.A{"$i", "$s", "$n"}}}, "héllo"},
		{"min skips null", bson.D{{Key: "$min", Value: bson.A{"$n", "$f", "$i"}}}, 2.5},
		{"stdDevPop", bson.D{{Key: "$stdDevPop", Value: bson.A{int32(1), int32(3)}}}, 1.0},
		{"stdDevSamp of one", bson.D{{Key: "$stdDevSamp", Value: bson.A{int32(1)}}}, nil},
		{"object literal drops missing", bson.D{{Key: "x", Value: "$zz"}, {Key: "y", Value: "$i"}}, bson.D{{Key: "y", Value: int32(7)}}},
	}
	for _, c := range cases {
		got, err := eval(t, c.expr, testDoc)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !same(got, c.want) {
			t.Errorf("%s: got %#v (%T), want %#v (%T)", c.name, got, got, c.want, c.want)
		}
	}
}

// same compares values with their types.
func same(a, b any) bool {
	if IsMissing(a) || IsMissing(b) {
		return IsMissing(a) && IsMissing(b)
	}
	if x, ok := a.(bson.Decimal128); ok {
		y, ok := b.(bson.Decimal128)
		return ok && x.String() == y.String()
	}
	ab, err1 := bson.Marshal(bson.D{{Key: "v", Value: a}})
	bb, err2 := bson.Marshal(bson.D{{Key: "v", Value: b}})
	return err1 == nil && err2 == nil && string(ab) == string(bb)
}

func TestExpressionErrors(t *testing.T) {
	cases := []struct {
		name string
		expr any
		code mongoerr.Code
	}{
		{"divide by zero", bson.D{{Key: "$divide", Value: bson.A{int32(1), int32(0)}}}, mongoerr.BadValue},
		{"decimal divide by zero", bson.D{{Key: "$divide", Value: bson.A{"$d", dec("0")}}}, mongoerr.BadValue},
		{"mod by zero", bson.D{{Key: "$mod", Value: bson.A{int32(1), int32(0)}}}, mongoerr.Location16610},
		{"add string", bson.D{{Key: "$add", Value: bson.A{int32(1), "$s"}}}, mongoerr.TypeMismatch},
		{"two dates", bson.D{{Key: "$add", Value: bson.A{"$t", "$t"}}}, mongoerr.Location16612},
		{"subtract date from number", bson.D{{Key: "$subtract", Value: bson.A{int32(1), "$t"}}}, mongoerr.TypeMismatch},
		{"divide strings", bson.D{{Key: "$divide", Value: bson.A{"$s", int32(1)}}}, mongoerr.TypeMismatch},
		{"abs long min", bson.D{{Key: "$abs", Value: int64(math.MinInt64)}}, mongoerr.Location28680},
		{"ln of zero", bson.D{{Key: "$ln", Value: int32(0)}}, mongoerr.Location28766},
		{"pow zero negative", bson.D{{Key: "$pow", Value: bson.A{int32(0), int32(-1)}}}, mongoerr.Location28764},
		{"round precision", bson.D{{Key: "$round", Value: bson.A{1.5, int32(101)}}}, mongoerr.Location51083},
		{"exp of decimal", bson.D{{Key: "$exp", Value: "$d"}}, mongoerr.NotImplemented},
		{"arity exact", bson.D{{Key: "$eq", Value: bson.A{int32(1)}}}, mongoerr.Location16020},
		{"arity range", bson.D{{Key: "$slice", Value: bson.A{"$a"}}}, mongoerr.Location28667},
		{"unknown operator", bson.D{{Key: "$nope", Value: int32(1)}}, mongoerr.InvalidPipelineOperator},
		{"unimplemented operator", bson.D{{Key: "$function", Value: bson.D{}}}, mongoerr.NotImplemented},
		{"meta without text", bson.D{{Key: "$meta", Value: "textScore"}}, mongoerr.Location40218},
		{"meta searchScore", bson.D{{Key: "$meta", Value: "searchScore"}}, mongoerr.NotImplemented},
		{"meta unknown", bson.D{{Key: "$meta", Value: "bogus"}}, mongoerr.Location17308},
		{"dateAdd years overflow", bson.D{{Key: "$dateAdd", Value: bson.D{{Key: "startDate", Value: "$t"}, {Key: "unit", Value: "year"}, {Key: "amount", Value: int64(math.MaxInt64)}}}}, mongoerr.Location5166406},
		{"dateAdd weeks overflow", bson.D{{Key: "$dateAdd", Value: bson.D{{Key: "startDate", Value: "$t"}, {Key: "unit", Value: "week"}, {Key: "amount", Value: int64(math.MinInt64 / 2)}}}}, mongoerr.Location5166406},
		{"dateAdd ms overflow", bson.D{{Key: "$dateAdd", Value: bson.D{{Key: "startDate", Value: "$t"}, {Key: "unit", Value: "millisecond"}, {Key: "amount", Value: int64(math.MaxInt64)}}}}, mongoerr.Location5166406},
		{"setUnion of a number", bson.D{{Key: "$setUnion", Value: bson.A{"$a", int32(1)}}}, mongoerr.Location17043},
		{"setIntersection of a string", bson.D{{Key: "$setIntersection", Value: bson.A{"$s"}}}, mongoerr.Location17047},
		{"setDifference first", bson.D{{Key: "$setDifference", Value: bson.A{"$s", "$a"}}}, mongoerr.Location17048},
		{"setDifference second", bson.D{{Key: "$setDifference", Value: bson.A{"$a", "$s"}}}, mongoerr.Location17049},
		{"setEquals one argument", bson.D{{Key: "$setEquals", Value: bson.A{"$a"}}}, mongoerr.Location17045},
		{"setEquals of null", bson.D{{Key: "$setEquals", Value: bson.A{"$a", "$n"}}}, mongoerr.Location17044},
		{"setIsSubset first", bson.D{{Key: "$setIsSubset", Value: bson.A{"$n", "$a"}}}, mongoerr.Location17046},
		{"setIsSubset second", bson.D{{Key: "$setIsSubset", Value: bson.A{"$a", "$n"}}}, mongoerr.Location17042},
		{"anyElementTrue of missing", bson.D{{Key: "$anyElementTrue", Value: bson.A{"$zz"}}}, mongoerr.Location17041},
		{"allElementsTrue of a number", bson.D{{Key: "$allElementsTrue", Value: "$i"}}, mongoerr.Location17040},
		{"two fields", bson.D{{Key: "$add", Value: bson.A{}}, {Key: "$sub", Value: bson.A{}}}, mongoerr.Location15983},
		{"undefined variable", "$$nope", mongoerr.Location17276},
		{"bad variable name", bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: bson.D{{Key: "Bad", Value: int32(1)}}}, {Key: "in", Value: int32(1)}}}}, mongoerr.FailedToParse},
		{"let scope ends", bson.D{{Key: "$add", Value: bson.A{bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: bson.D{{Key: "v", Value: int32(1)}}}, {Key: "in", Value: "$$v"}}}}, "$$v"}}}, mongoerr.Location17276},
		{"concat number", bson.D{{Key: "$concat", Value: bson.A{"a", int32(1)}}}, mongoerr.Location16702},
		{"toLower array", bson.D{{Key: "$toLower", Value: "$a"}}, mongoerr.Location16007},
		{"substrBytes middle of a character", bson.D{{Key: "$substrBytes", Value: bson.A{"$s", int32(0), int32(2)}}}, mongoerr.Location28657},
		{"size of null", bson.D{{Key: "$size", Value: "$n"}}, mongoerr.Location17124},
		{"arrayElemAt fraction", bson.D{{Key: "$arrayElemAt", Value: bson.A{"$a", 1.5}}}, mongoerr.Location28691},
		{"filter input", bson.D{{Key: "$filter", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "cond", Value: true}}}}, mongoerr.Location28651},
		{"range step zero", bson.D{{Key: "$range", Value: bson.A{int32(0), int32(1), int32(0)}}}, mongoerr.Location34449},
		{"date of string", bson.D{{Key: "$month", Value: "$s"}}, mongoerr.Location16006},
		{"unknown time zone", bson.D{{Key: "$month", Value: bson.D{{Key: "date", Value: "$t"}, {Key: "timezone", Value: "Nowhere/Else"}}}}, mongoerr.Location40485},
		{"format", bson.D{{Key: "$dateToString", Value: bson.D{{Key: "date", Value: "$t"}, {Key: "format", Value: "%"}}}}, mongoerr.Location18535},
		{"convert failure", bson.D{{Key: "$toInt", Value: "$s"}}, mongoerr.ConversionFailure},
		{"convert overflow", bson.D{{Key: "$toInt", Value: "$l"}}, mongoerr.ConversionFailure},
		{"convert unknown type", bson.D{{Key: "$convert", Value: bson.D{{Key: "input", Value: int32(1)}, {Key: "to", Value: "nope"}}}}, mongoerr.BadValue},
		{"mergeObjects number", bson.D{{Key: "$mergeObjects", Value: bson.A{int32(1)}}}, mongoerr.Location40400},
		{"switch no match", bson.D{{Key: "$switch", Value: bson.D{{Key: "branches", Value: bson.A{bson.D{{Key: "case", Value: false}, {Key: "then", Value: 1}}}}}}}, mongoerr.Location40066},
		{"cond missing else", bson.D{{Key: "$cond", Value: bson.D{{Key: "if", Value: true}, {Key: "then", Value: 1}}}}, mongoerr.Location17082},
	}
	for _, c := range cases {
		_, err := eval(t, c.expr, testDoc)
		e, ok := mongoerr.As(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: got %v, want code %d", c.name, err, c.code)
		}
	}
}

func TestNowAndOuterVariables(t *testing.T) {
	x, err := Parse(bson.A{"$$NOW", "$$k"}, NewScope(map[string]any{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	now := bson.NewDateTimeFromTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	got, err := x.Eval(NewCtx(bson.D{}, map[string]any{"k": "v"}, now))
	if err != nil || !same(got, bson.A{now, "v"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// $expr registers with package query: a filter with $expr matches through
// this package and reports evaluation errors.
func TestCompileForFilters(t *testing.T) {
	pred, err := Compile(bson.D{{Key: "$gt", Value: bson.A{"$i", int32(5)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := pred(testDoc); !ok || err != nil {
		t.Fatalf("$i > 5: %v %v", ok, err)
	}
	pred, _ = Compile(bson.D{{Key: "$divide", Value: bson.A{int32(1), int32(0)}}}, nil)
	if _, err := pred(testDoc); err == nil {
		t.Fatal("$divide by zero matched without error")
	}
}
