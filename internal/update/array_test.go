package update

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestMinMax(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "min lower", doc: d("_id", 1, "a", int32(5)), update: d("$min", d("a", int32(3))),
			want: d("_id", 1, "a", int32(3)), changed: true},
		{name: "min higher keeps", doc: d("_id", 1, "a", int32(5)), update: d("$min", d("a", int32(7))),
			want: d("_id", 1, "a", int32(5)), changed: false},
		{name: "min equal across types keeps", doc: d("_id", 1, "a", int32(5)), update: d("$min", d("a", 5.0)),
			want: d("_id", 1, "a", int32(5)), changed: false},
		{name: "max higher", doc: d("_id", 1, "a", int32(5)), update: d("$max", d("a", 7.5)),
			want: d("_id", 1, "a", 7.5), changed: true},
		{name: "max lower keeps", doc: d("_id", 1, "a", int32(5)), update: d("$max", d("a", int64(1))),
			want: d("_id", 1, "a", int32(5)), changed: false},
		{name: "cross type: string above numbers", doc: d("_id", 1, "a", int32(5)), update: d("$max", d("a", "x")),
			want: d("_id", 1, "a", "x"), changed: true},
		{name: "cross type: null below numbers", doc: d("_id", 1, "a", int32(5)), update: d("$min", d("a", nil)),
			want: d("_id", 1, "a", nil), changed: true},
		{name: "missing is set", doc: d("_id", 1), update: d("$max", d("a.b", int32(1))),
			want: d("_id", 1, "a", d("b", int32(1))), changed: true},
		{name: "through scalar", doc: d("_id", 1, "a", int32(1)), update: d("$min", d("a.b", int32(1))),
			code: mongoerr.PathNotViable},
	})
}

func TestPush(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "append", doc: d("_id", 1, "a", a(1)), update: d("$push", d("a", 2)),
			want: d("_id", 1, "a", a(1, 2)), changed: true},
		{name: "missing creates array", doc: d("_id", 1), update: d("$push", d("a.b", 2)),
			want: d("_id", 1, "a", d("b", a(2))), changed: true},
		{name: "array value pushed as one element", doc: d("_id", 1, "a", a()), update: d("$push", d("a", a(1, 2))),
			want: d("_id", 1, "a", a(a(1, 2))), changed: true},
		{name: "document without $each pushed as is", doc: d("_id", 1, "a", a()), update: d("$push", d("a", d("$slice", 1))),
			want: d("_id", 1, "a", a(d("$slice", 1))), changed: true},
		{name: "each", doc: d("_id", 1, "a", a(1)), update: d("$push", d("a", d("$each", a(2, 3)))),
			want: d("_id", 1, "a", a(1, 2, 3)), changed: true},
		{name: "each empty on missing creates empty array", doc: d("_id", 1), update: d("$push", d("a", d("$each", a()))),
			want: d("_id", 1, "a", a()), changed: true},
		{name: "position", doc: d("_id", 1, "a", a(1, 4)), update: d("$push", d("a", d("$each", a(2, 3), "$position", int32(1)))),
			want: d("_id", 1, "a", a(1, 2, 3, 4)), changed: true},
		{name: "position zero", doc: d("_id", 1, "a", a(1)), update: d("$push", d("a", d("$each", a(0), "$position", int32(0)))),
			want: d("_id", 1, "a", a(0, 1)), changed: true},
		{name: "negative position", doc: d("_id", 1, "a", a(1, 2, 3)), update: d("$push", d("a", d("$each", a("x"), "$position", int32(-1)))),
			want: d("_id", 1, "a", a(1, 2, "x", 3)), changed: true},
		{name: "position beyond end", doc: d("_id", 1, "a", a(1)), update: d("$push", d("a", d("$each", a(2), "$position", int32(10)))),
			want: d("_id", 1, "a", a(1, 2)), changed: true},
		{name: "slice positive", doc: d("_id", 1, "a", a(1, 2)), update: d("$push", d("a", d("$each", a(3, 4), "$slice", int32(3)))),
			want: d("_id", 1, "a", a(1, 2, 3)), changed: true},
		{name: "slice negative", doc: d("_id", 1, "a", a(1, 2)), update: d("$push", d("a", d("$each", a(3, 4), "$slice", int32(-3)))),
			want: d("_id", 1, "a", a(2, 3, 4)), changed: true},
		{name: "slice zero", doc: d("_id", 1, "a", a(1, 2)), update: d("$push", d("a", d("$each", a(3), "$slice", 0.0))),
			want: d("_id", 1, "a", a()), changed: true},
		{name: "sort whole elements then slice", doc: d("_id", 1, "a", a(int32(5), int32(1))),
			update: d("$push", d("a", d("$each", a(int32(3)), "$sort", int32(-1), "$slice", int32(2)))),
			want:   d("_id", 1, "a", a(int32(5), int32(3))), changed: true},
		{name: "sort by field", doc: d("_id", 1, "a", a(d("s", 3), d("s", 1))),
			update: d("$push", d("a", d("$each", a(d("s", 2)), "$sort", d("s", 1)))),
			want:   d("_id", 1, "a", a(d("s", 1), d("s", 2), d("s", 3))), changed: true},
		{name: "sort by dotted field, missing first", doc: d("_id", 1, "a", a(d("s", d("t", 2)), d("x", 1))),
			update: d("$push", d("a", d("$each", a(), "$sort", d("s.t", -1)))),
			want:   d("_id", 1, "a", a(d("s", d("t", 2)), d("x", 1))), changed: false},
		{name: "not an array", doc: d("_id", 1, "a", int32(1)), update: d("$push", d("a", 2)),
			code: mongoerr.BadValue, msg: "The field 'a' must be an array but is of type int in document {_id: 1}"},
		{name: "each not an array", update: d("$push", d("a", d("$each", int32(1)))),
			code: mongoerr.BadValue, msg: "The argument to $each in $push must be an array but it was of type: int"},
		{name: "slice not an integer", update: d("$push", d("a", d("$each", a(), "$slice", 1.5))),
			code: mongoerr.BadValue, msg: "The value for $slice must be an integer value"},
		{name: "position not an integer", update: d("$push", d("a", d("$each", a(), "$position", "x"))),
			code: mongoerr.BadValue, msg: "The value for $position must be an integer value"},
		{name: "bad sort", update: d("$push", d("a", d("$each", a(), "$sort", int32(2)))),
			code: mongoerr.BadValue, msg: "The $sort is invalid"},
		{name: "bad sort field direction", update: d("$push", d("a", d("$each", a(), "$sort", d("x", "up")))),
			code: mongoerr.BadValue, msg: "The $sort element value must be either 1 or -1"},
		{name: "empty sort pattern", update: d("$push", d("a", d("$each", a(), "$sort", d()))),
			code: mongoerr.BadValue, msg: "The $sort pattern is empty"},
		{name: "unknown clause", update: d("$push", d("a", d("$each", a(), "$foo", 1))),
			code: mongoerr.BadValue, msg: "Unrecognized clause in $push: $foo"},
		{name: "through scalar", doc: d("_id", 1, "a", int32(1)), update: d("$push", d("a.b", 1)),
			code: mongoerr.PathNotViable},
	})
}

func TestAddToSet(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "adds new", doc: d("_id", 1, "a", a(int32(1))), update: d("$addToSet", d("a", int32(2))),
			want: d("_id", 1, "a", a(int32(1), int32(2))), changed: true},
		{name: "present by numeric equality", doc: d("_id", 1, "a", a(int32(1))), update: d("$addToSet", d("a", 1.0)),
			want: d("_id", 1, "a", a(int32(1))), changed: false},
		{name: "document equality respects field order", doc: d("_id", 1, "a", a(d("x", 1, "y", 2))),
			update: d("$addToSet", d("a", d("y", 2, "x", 1))),
			want:   d("_id", 1, "a", a(d("x", 1, "y", 2), d("y", 2, "x", 1))), changed: true},
		{name: "each with duplicates", doc: d("_id", 1, "a", a("x")), update: d("$addToSet", d("a", d("$each", a("x", "y", "y", "z")))),
			want: d("_id", 1, "a", a("x", "y", "z")), changed: true},
		{name: "missing creates", doc: d("_id", 1), update: d("$addToSet", d("a", d("$each", a(1, 1)))),
			want: d("_id", 1, "a", a(1)), changed: true},
		{name: "missing with empty each creates empty array", doc: d("_id", 1), update: d("$addToSet", d("a", d("$each", a()))),
			want: d("_id", 1, "a", a()), changed: true},
		{name: "array value is one element", doc: d("_id", 1, "a", a(1)), update: d("$addToSet", d("a", a(1))),
			want: d("_id", 1, "a", a(1, a(1))), changed: true},
		{name: "not an array", doc: d("_id", 1, "a", "s"), update: d("$addToSet", d("a", 1)),
			code: mongoerr.BadValue, msg: "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type string"},
		{name: "each not an array", update: d("$addToSet", d("a", d("$each", int32(1)))),
			code: mongoerr.TypeMismatch, msg: "The argument to $each in $addToSet must be an array but it was of type int"},
		{name: "fields after each", update: d("$addToSet", d("a", d("$each", a(), "x", 1))),
			code: mongoerr.BadValue, msg: "Found unexpected fields after $each in $addToSet"},
	})
}

func TestPop(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "last", doc: d("_id", 1, "a", a(1, 2, 3)), update: d("$pop", d("a", int32(1))),
			want: d("_id", 1, "a", a(1, 2)), changed: true},
		{name: "first", doc: d("_id", 1, "a", a(1, 2, 3)), update: d("$pop", d("a", -1.0)),
			want: d("_id", 1, "a", a(2, 3)), changed: true},
		{name: "empty", doc: d("_id", 1, "a", a()), update: d("$pop", d("a", int64(1))),
			want: d("_id", 1, "a", a()), changed: false},
		{name: "missing", doc: d("_id", 1), update: d("$pop", d("a.b", int32(1))),
			want: d("_id", 1), changed: false},
		{name: "nested", doc: d("_id", 1, "a", d("b", a(1, 2))), update: d("$pop", d("a.b", int32(1))),
			want: d("_id", 1, "a", d("b", a(1))), changed: true},
		{name: "not an array", doc: d("_id", 1, "a", d("b", int32(1))), update: d("$pop", d("a.b", int32(1))),
			code: mongoerr.TypeMismatch, msg: "Path 'a.b' contains an element of non-array type 'int'"},
		{name: "bad value", update: d("$pop", d("a", int32(2))),
			code: mongoerr.FailedToParse, msg: "$pop expects 1 or -1, found: 2"},
		{name: "not a number", update: d("$pop", d("a", "x")),
			code: mongoerr.FailedToParse, msg: `Expected a number in: a: "x"`},
	})
}

func TestPullAll(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "removes every occurrence", doc: d("_id", 1, "a", a(int32(1), int32(2), int32(1), int32(3))),
			update: d("$pullAll", d("a", a(1.0, int32(3)))),
			want:   d("_id", 1, "a", a(int32(2))), changed: true},
		{name: "nothing to remove", doc: d("_id", 1, "a", a(1)), update: d("$pullAll", d("a", a(5))),
			want: d("_id", 1, "a", a(1)), changed: false},
		{name: "missing", doc: d("_id", 1), update: d("$pullAll", d("a", a(5))),
			want: d("_id", 1), changed: false},
		{name: "array elements compared whole", doc: d("_id", 1, "a", a(a(1, 2), 1)), update: d("$pullAll", d("a", a(a(1, 2)))),
			want: d("_id", 1, "a", a(1)), changed: true},
		{name: "not an array", doc: d("_id", 1, "a", 1), update: d("$pullAll", d("a", a(5))),
			code: mongoerr.BadValue, msg: "Cannot apply $pullAll to a non-array value"},
		{name: "argument not an array", update: d("$pullAll", d("a", int32(5))),
			code: mongoerr.BadValue, msg: "$pullAll requires an array argument but was given a int"},
	})
}

func TestPullEquality(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "scalar", doc: d("_id", 1, "a", a(int32(1), int32(2), int64(1))), update: d("$pull", d("a", int32(1))),
			want: d("_id", 1, "a", a(int32(2))), changed: true},
		{name: "array value", doc: d("_id", 1, "a", a(a(1), 1)), update: d("$pull", d("a", a(1))),
			want: d("_id", 1, "a", a(1)), changed: true},
		{name: "missing", doc: d("_id", 1), update: d("$pull", d("a", 1)),
			want: d("_id", 1), changed: false},
		{name: "not an array", doc: d("_id", 1, "a", 1), update: d("$pull", d("a", 1)),
			code: mongoerr.BadValue, msg: "Cannot apply $pull to a non-array value"},
	})
}

func TestPullConditions(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "operator condition on scalars", doc: d("_id", 1, "a", a(int32(3), int32(6), int32(9), "x")),
			update: d("$pull", d("a", d("$gte", int32(6)))),
			want:   d("_id", 1, "a", a(int32(3), "x")), changed: true},
		{name: "$in", doc: d("_id", 1, "a", a("x", "y", "z")),
			update: d("$pull", d("a", d("$in", a("x", "z")))),
			want:   d("_id", 1, "a", a("y")), changed: true},
		{name: "document condition is a query on elements", doc: d("_id", 1, "a", a(d("s", 8, "i", "B"), d("s", 8, "i", "C"), int32(8))),
			update: d("$pull", d("a", d("s", 8, "i", "B"))),
			want:   d("_id", 1, "a", a(d("s", 8, "i", "C"), int32(8))), changed: true},
		{name: "document condition with operators on fields", doc: d("_id", 1, "a", a(d("s", 1), d("s", 9))),
			update: d("$pull", d("a", d("s", d("$gt", 5)))),
			want:   d("_id", 1, "a", a(d("s", 1))), changed: true},
		{name: "equality does not look inside nested arrays", doc: d("_id", 1, "a", a(a(1), 1)),
			update: d("$pull", d("a", 1)),
			want:   d("_id", 1, "a", a(a(1))), changed: true},
		{name: "regex", doc: d("_id", 1, "a", a("apple", "banana")),
			update: d("$pull", d("a", bson.Regex{Pattern: "^a"})),
			want:   d("_id", 1, "a", a("banana")), changed: true},
		{name: "no match", doc: d("_id", 1, "a", a(1, 2)), update: d("$pull", d("a", d("$gt", 5))),
			want: d("_id", 1, "a", a(1, 2)), changed: false},
		{name: "invalid condition", update: d("$pull", d("a", d("$foo", 1))),
			code: mongoerr.BadValue},
	})
}
