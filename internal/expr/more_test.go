package expr

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func op(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

func kv(pairs ...any) bson.D {
	d := bson.D{}
	for i := 0; i < len(pairs); i += 2 {
		d = append(d, bson.E{Key: pairs[i].(string), Value: pairs[i+1]})
	}
	return d
}

var moreDoc = bson.D{
	{Key: "a.b", Value: int32(1)},
	{Key: "$x", Value: "dollar"},
	{Key: "arr", Value: bson.A{int32(3), nil, int32(1), 2.0, int32(1), "s"}},
	{Key: "docs", Value: bson.A{kv("n", int32(2), "k", "b"), kv("n", int32(1), "k", "a"), int32(7), kv("n", int32(2), "k", "c")}},
	{Key: "ts", Value: bson.Timestamp{T: 1700000000, I: 42}},
	{Key: "n", Value: nil},
}

func TestMoreOperators(t *testing.T) {
	cases := []struct {
		name string
		expr any
		want any
	}{
		{"sin", op("$sin", int32(0)), 0.0},
		{"cos", op("$cos", 0.0), 1.0},
		{"atan2", op("$atan2", bson.A{int32(1), int32(1)}), math.Pi / 4},
		{"acosh at 1", op("$acosh", int32(1)), 0.0},
		{"sin of null", op("$sin", "$n"), nil},
		{"sin of missing", op("$sin", "$zz"), nil},
		{"sin of NaN", op("$sin", math.NaN()), math.NaN()},
		{"atan of infinity", op("$atan", math.Inf(1)), math.Pi / 2},
		{"atan2 with null", op("$atan2", bson.A{nil, "$s"}), nil},
		{"degreesToRadians", op("$degreesToRadians", int32(180)), math.Pi},
		{"radiansToDegrees", op("$radiansToDegrees", math.Pi), 180.0},
		{"degreesToRadians decimal", op("$degreesToRadians", dec("180")), dec("3.141592653589793238462643383279503")},
		{"bitAnd ints", op("$bitAnd", bson.A{int32(12), int32(10)}), int32(8)},
		{"bitOr long", op("$bitOr", bson.A{int32(12), int64(3)}), int64(15)},
		{"bitXor", op("$bitXor", bson.A{int32(12), int32(10)}), int32(6)},
		{"bitAnd none", op("$bitAnd", bson.A{}), int32(-1)},
		{"bitOr null", op("$bitOr", bson.A{int32(1), "$n"}), nil},
		{"bitNot", op("$bitNot", int64(0)), int64(-1)},
		{"getField dotted", op("$getField", "a.b"), int32(1)},
		{"getField dollar", op("$getField", op("$literal", "$x")), "dollar"},
		{"getField absent", op("$getField", kv("field", "q", "input", kv("q", nil))), nil},
		{"getField missing", op("$getField", "nope"), Missing},
		{"getField null input", op("$getField", kv("field", "q", "input", "$n")), nil},
		{"setField adds", op("$setField", kv("field", "x.y", "input", kv("a", int32(1)), "value", int32(2))), kv("a", int32(1), "x.y", int32(2))},
		{"setField replaces in place", op("$setField", kv("field", "a", "input", kv("a", int32(1), "b", int32(2)), "value", "z")), kv("a", "z", "b", int32(2))},
		{"setField REMOVE", op("$setField", kv("field", "a", "input", kv("a", int32(1), "b", int32(2)), "value", "$$REMOVE")), kv("b", int32(2))},
		{"unsetField", op("$unsetField", kv("field", op("$literal", "$x"), "input", "$$ROOT")), append(bson.D{moreDoc[0]}, moreDoc[2:]...)},
		{"setField null input", op("$setField", kv("field", "a", "input", "$n", "value", int32(1))), nil},
		{"sortArray values", op("$sortArray", kv("input", "$arr", "sortBy", int32(-1))), bson.A{"s", int32(3), 2.0, int32(1), int32(1), nil}},
		{"sortArray by field", op("$sortArray", kv("input", "$docs", "sortBy", kv("n", int32(1), "k", int32(-1)))), bson.A{int32(7), kv("n", int32(1), "k", "a"), kv("n", int32(2), "k", "c"), kv("n", int32(2), "k", "b")}},
		{"sortArray null", op("$sortArray", kv("input", "$n", "sortBy", int32(1))), nil},
		// No implicit array traversal on a sort key: an array is compared
		// whole (arrays sort after numbers), and a path through an array
		// finds nothing (null).
		{"sortArray array key", op("$sortArray", kv("input", bson.A{kv("a", bson.A{int32(1), int32(5)}), kv("a", int32(3))}, "sortBy", kv("a", int32(1)))), bson.A{kv("a", int32(3)), kv("a", bson.A{int32(1), int32(5)})}},
		{"sortArray path through array", op("$sortArray", kv("input", bson.A{kv("a", kv("b", int32(2))), kv("a", bson.A{kv("b", int32(3))})}, "sortBy", kv("a.b", int32(1)))), bson.A{kv("a", bson.A{kv("b", int32(3))}), kv("a", kv("b", int32(2)))}},
		{"zip shortest", op("$zip", kv("inputs", bson.A{bson.A{int32(1), int32(2)}, bson.A{"a"}})), bson.A{bson.A{int32(1), "a"}}},
		{"zip longest defaults", op("$zip", kv("inputs", bson.A{bson.A{int32(1), int32(2)}, bson.A{"a"}}, "useLongestLength", true, "defaults", bson.A{int32(0), "z"})), bson.A{bson.A{int32(1), "a"}, bson.A{int32(2), "z"}}},
		{"zip longest null fill", op("$zip", kv("inputs", bson.A{bson.A{int32(1), int32(2)}, bson.A{}}, "useLongestLength", true)), bson.A{bson.A{int32(1), nil}, bson.A{int32(2), nil}}},
		{"zip null input", op("$zip", kv("inputs", bson.A{"$n", bson.A{}})), nil},
		// An empty defaults array is no defaults (MongoDB checks its size).
		{"zip empty defaults", op("$zip", kv("inputs", bson.A{bson.A{int32(1)}}, "defaults", bson.A{})), bson.A{bson.A{int32(1)}}},
		{"zip longest empty defaults", op("$zip", kv("inputs", bson.A{bson.A{int32(1)}, bson.A{}}, "useLongestLength", true, "defaults", bson.A{})), bson.A{bson.A{int32(1), nil}}},
		{"bsonSize", op("$bsonSize", kv("a", int32(1))), int32(12)},
		{"bsonSize null", op("$bsonSize", "$zz"), nil},
		{"binarySize string", op("$binarySize", "héllo"), int32(6)},
		{"binarySize bin", op("$binarySize", bson.Binary{Data: []byte{1, 2, 3}}), int32(3)},
		{"tsSecond", op("$tsSecond", "$ts"), int64(1700000000)},
		{"tsIncrement", op("$tsIncrement", "$ts"), int64(42)},
		{"tsSecond null", op("$tsSecond", "$n"), nil},
		{"firstN", op("$firstN", kv("n", int32(2), "input", "$arr")), bson.A{int32(3), nil}},
		{"lastN more than size", op("$lastN", kv("n", int64(10), "input", bson.A{int32(1), int32(2)})), bson.A{int32(1), int32(2)}},
		{"maxN skips null", op("$maxN", kv("n", 2.0, "input", "$arr")), bson.A{"s", int32(3)}},
		{"minN ties in order", op("$minN", kv("n", int32(3), "input", "$arr")), bson.A{int32(1), int32(1), 2.0}},
		{"median", op("$median", kv("input", bson.A{int32(3), int32(1), "x", int32(2), int32(10)}, "method", "approximate")), 2.0},
		{"median of none", op("$median", kv("input", bson.A{"x"}, "method", "approximate")), nil},
		{"median of a number", op("$median", kv("input", int32(4), "method", "approximate")), 4.0},
		{"median skips NaN", op("$median", kv("input", bson.A{math.NaN(), int32(1), int32(2), int32(3)}, "method", "approximate")), 2.0},
		{"median of NaN", op("$median", kv("input", math.NaN(), "method", "approximate")), math.NaN()},
		{"percentile", op("$percentile", kv("input", bson.A{int32(1), int32(2), int32(3), int32(4), int32(5), int32(6), int32(7), int32(8), int32(9), int32(10)}, "p", bson.A{0.0, 0.25, 0.5, int32(1)}, "method", "approximate")), bson.A{1.0, 3.0, 5.0, 10.0}},
		{"percentile of null", op("$percentile", kv("input", "$n", "p", bson.A{0.5, 0.9}, "method", "approximate")), bson.A{nil, nil}},
	}
	for _, c := range cases {
		got, err := eval(t, c.expr, moreDoc)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if f, ok := c.want.(float64); ok {
			g, isF := got.(float64)
			if !isF || !(math.Abs(g-f) < 1e-12 || (math.IsNaN(f) && math.IsNaN(g))) {
				t.Errorf("%s: got %#v (%T), want %v", c.name, got, got, f)
			}
			continue
		}
		if !same(got, c.want) {
			t.Errorf("%s: got %#v (%T), want %#v (%T)", c.name, got, got, c.want, c.want)
		}
	}
}

func TestMoreOperatorErrors(t *testing.T) {
	cases := []struct {
		name string
		expr any
		code mongoerr.Code
	}{
		{"sin of string", op("$sin", "x"), mongoerr.Location28765},
		{"sin of infinity", op("$sin", math.Inf(1)), mongoerr.Location50989},
		{"acos out of range", op("$acos", int32(2)), mongoerr.Location50989},
		{"acosh below 1", op("$acosh", 0.5), mongoerr.Location50989},
		{"sin of decimal", op("$sin", dec("1")), mongoerr.NotImplemented},
		{"atan2 first", op("$atan2", bson.A{"x", int32(1)}), mongoerr.Location51044},
		{"atan2 second", op("$atan2", bson.A{int32(1), "x"}), mongoerr.Location51045},
		{"atan2 arity", op("$atan2", bson.A{int32(1)}), mongoerr.Location16020},
		{"bitAnd double", op("$bitAnd", bson.A{int32(1), 1.0}), mongoerr.TypeMismatch},
		{"bitNot string", op("$bitNot", "x"), mongoerr.Location28765},
		{"bitNot double", op("$bitNot", 1.0), mongoerr.TypeMismatch},
		{"atan2 string before null", op("$atan2", bson.A{"x", nil}), mongoerr.Location51044},
		{"getField unknown arg", op("$getField", kv("field", "a", "bogus", int32(1))), mongoerr.Location3041701},
		{"getField no field", op("$getField", kv("input", "$$ROOT")), mongoerr.Location3041702},
		{"getField no input", op("$getField", kv("field", "a")), mongoerr.Location3041703},
		{"getField number", op("$getField", int32(1)), mongoerr.Location3041704},
		{"getField input string", op("$getField", kv("field", "a", "input", "s")), mongoerr.Location3041705},
		{"setField not object", op("$setField", int32(1)), mongoerr.Location4161100},
		{"setField unknown", op("$setField", kv("field", "a", "input", "$$ROOT", "value", int32(1), "x", int32(1))), mongoerr.Location4161101},
		{"unsetField value", op("$unsetField", kv("field", "a", "input", "$$ROOT", "value", int32(1))), mongoerr.Location4161101},
		{"setField no field", op("$setField", kv("input", "$$ROOT", "value", int32(1))), mongoerr.Location4161102},
		{"setField no value", op("$setField", kv("field", "a", "input", "$$ROOT")), mongoerr.Location4161103},
		{"setField no input", op("$setField", kv("field", "a", "value", int32(1))), mongoerr.Location4161109},
		{"setField path field", op("$setField", kv("field", "$a", "input", "$$ROOT", "value", int32(1))), mongoerr.Location4161108},
		{"setField computed field", op("$setField", kv("field", op("$toString", "$a"), "input", "$$ROOT", "value", int32(1))), mongoerr.Location4161106},
		{"setField number field", op("$setField", kv("field", int32(1), "input", "$$ROOT", "value", int32(1))), mongoerr.Location4161107},
		{"setField input number", op("$setField", kv("field", "a", "input", int32(1), "value", int32(1))), mongoerr.Location4161105},
		{"sortArray not object", op("$sortArray", int32(1)), mongoerr.Location2942500},
		{"sortArray unknown", op("$sortArray", kv("input", "$arr", "sortBy", int32(1), "x", int32(1))), mongoerr.Location2942501},
		{"sortArray no input", op("$sortArray", kv("sortBy", int32(1))), mongoerr.Location2942502},
		{"sortArray no sortBy", op("$sortArray", kv("input", "$arr")), mongoerr.Location2942503},
		{"sortArray string input", op("$sortArray", kv("input", "x", "sortBy", int32(1))), mongoerr.Location2942504},
		{"sortArray bad direction", op("$sortArray", kv("input", "$arr", "sortBy", int32(2))), mongoerr.Location2942506},
		{"zip not object", op("$zip", bson.A{}), mongoerr.Location34460},
		{"zip inputs not array", op("$zip", kv("inputs", int32(1))), mongoerr.Location34461},
		{"zip defaults not array", op("$zip", kv("inputs", bson.A{"$arr"}, "defaults", int32(1))), mongoerr.Location34462},
		{"zip longest not bool", op("$zip", kv("inputs", bson.A{"$arr"}, "useLongestLength", int32(1))), mongoerr.Location34463},
		{"zip unknown", op("$zip", kv("inputs", bson.A{"$arr"}, "x", int32(1))), mongoerr.Location34464},
		{"zip no inputs", op("$zip", kv()), mongoerr.Location34465},
		{"zip defaults without longest", op("$zip", kv("inputs", bson.A{"$arr"}, "defaults", bson.A{int32(1)})), mongoerr.Location34466},
		{"zip defaults length", op("$zip", kv("inputs", bson.A{"$arr"}, "useLongestLength", true, "defaults", bson.A{int32(1), int32(2)})), mongoerr.Location34467},
		{"zip input string", op("$zip", kv("inputs", bson.A{"x"})), mongoerr.Location34468},
		{"rand with argument", op("$rand", kv("seed", int32(1))), mongoerr.Location3040501},
		{"rand with an array argument", op("$rand", bson.A{int32(1)}), mongoerr.Location3040501},
		{"rand not an object", op("$rand", "x"), mongoerr.Location10065},
		{"bsonSize of number", op("$bsonSize", int32(1)), mongoerr.Location31393},
		{"binarySize of number", op("$binarySize", int32(1)), mongoerr.Location51276},
		{"tsSecond of date", op("$tsSecond", bson.DateTime(0)), mongoerr.Location5687301},
		{"tsIncrement of number", op("$tsIncrement", int32(1)), mongoerr.Location5687302},
		{"firstN not object", op("$firstN", int32(1)), mongoerr.Location5787801},
		{"maxN not object", op("$maxN", int32(1)), mongoerr.Location5787900},
		{"firstN unknown", op("$firstN", kv("n", int32(1), "input", "$arr", "x", int32(1))), mongoerr.Location5787901},
		{"firstN no n", op("$firstN", kv("input", "$arr")), mongoerr.Location5787906},
		{"firstN no input", op("$firstN", kv("n", int32(1))), mongoerr.Location5787907},
		{"firstN n string", op("$firstN", kv("n", "x", "input", "$arr")), mongoerr.Location5787902},
		{"firstN n fraction", op("$firstN", kv("n", 1.5, "input", "$arr")), mongoerr.Location5787903},
		{"firstN n zero", op("$firstN", kv("n", int32(0), "input", "$arr")), mongoerr.Location5787908},
		{"firstN input null", op("$firstN", kv("n", int32(1), "input", "$n")), mongoerr.Location5788200},
		{"median not object", op("$median", int32(1)), mongoerr.Location7436201},
		{"percentile not object", op("$percentile", int32(1)), mongoerr.Location7436200},
		{"median no method", op("$median", kv("input", "$arr")), mongoerr.Location40414},
		{"median bad method", op("$median", kv("input", "$arr", "method", "exact")), mongoerr.BadValue},
		{"median method number", op("$median", kv("input", "$arr", "method", int32(1))), mongoerr.TypeMismatch},
		{"median unknown", op("$median", kv("input", "$arr", "method", "approximate", "p", bson.A{0.5})), mongoerr.UnknownField},
		{"percentile p path", op("$percentile", kv("input", "$arr", "p", "$arr", "method", "approximate")), mongoerr.Location7750300},
		{"percentile p empty", op("$percentile", kv("input", "$arr", "p", bson.A{}, "method", "approximate")), mongoerr.Location7750301},
		{"percentile p string", op("$percentile", kv("input", "$arr", "p", bson.A{"x"}, "method", "approximate")), mongoerr.Location7750302},
		{"percentile p above 1", op("$percentile", kv("input", "$arr", "p", bson.A{1.5}, "method", "approximate")), mongoerr.Location7750303},
		{"toHashedIndexKey refused", op("$toHashedIndexKey", "$a"), mongoerr.NotImplemented},
	}
	for _, c := range cases {
		_, err := eval(t, c.expr, moreDoc)
		e, ok := mongoerr.As(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: got %v, want code %d", c.name, err, c.code)
		}
	}
}

func TestRand(t *testing.T) {
	seen := map[float64]bool{}
	for i := range 20 {
		arg := any(bson.D{})
		if i%2 == 1 {
			arg = bson.A{} // MongoDB takes an empty array too
		}
		v, err := eval(t, op("$rand", arg), nil)
		f, ok := v.(float64)
		if err != nil || !ok || f < 0 || f >= 1 {
			t.Fatalf("$rand: %v %v", v, err)
		}
		seen[f] = true
	}
	if len(seen) < 2 {
		t.Fatalf("$rand gave one value 20 times")
	}
}
