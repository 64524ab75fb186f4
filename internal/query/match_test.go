package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ej parses relaxed extended JSON into a document.
func ej(t testing.TB, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d
}

// The cases follow MongoDB's documented query semantics (operator reference
// pages, and the null/array behaviour its own test suite pins down).
var matchCases = []struct {
	filter, doc string
	want        bool
}{
	// Plain equality, across numeric types.
	{`{"a": 1}`, `{"a": 1}`, true},
	{`{"a": 1}`, `{"a": 1.0}`, true},
	{`{"a": 1}`, `{"a": {"$numberLong": "1"}}`, true},
	{`{"a": 1}`, `{"a": {"$numberDecimal": "1.00"}}`, true},
	{`{"a": 1}`, `{"a": "1"}`, false},
	{`{"a": 1}`, `{"b": 1}`, false},
	{`{"a": 1, "b": 2}`, `{"a": 1, "b": 2}`, true},
	{`{"a": 1, "b": 2}`, `{"a": 1, "b": 3}`, false},
	{`{}`, `{"x": 1}`, true},
	{`{"a": "x"}`, `{"a": {"$symbol": "x"}}`, true},
	{`{"a": {"$eq": {"$numberDouble": "NaN"}}}`, `{"a": {"$numberDecimal": "NaN"}}`, true},
	{`{"a": 0}`, `{"a": -0.0}`, true},

	// Arrays: the array itself or any element.
	{`{"tags": "x"}`, `{"tags": ["x", "y"]}`, true},
	{`{"tags": "z"}`, `{"tags": ["x", "y"]}`, false},
	{`{"a": [1, 2]}`, `{"a": [1, 2]}`, true},
	{`{"a": [1, 2]}`, `{"a": [2, 1]}`, false},
	{`{"a": [1, 2]}`, `{"a": [[1, 2], 3]}`, true},
	{`{"a": [1, 2]}`, `{"a": [1, 2, 3]}`, false},
	{`{"a": []}`, `{"a": []}`, true},
	{`{"a": []}`, `{"a": [[]]}`, true},
	{`{"a": 1}`, `{"a": [[1]]}`, false},
	{`{"a": [1]}`, `{"a": [[1]]}`, true},

	// Objects: exact, field order matters.
	{`{"a": {"x": 1, "y": 2}}`, `{"a": {"x": 1, "y": 2}}`, true},
	{`{"a": {"x": 1, "y": 2}}`, `{"a": {"y": 2, "x": 1}}`, false},
	{`{"a": {"x": 1}}`, `{"a": {"x": 1, "y": 2}}`, false},
	{`{"a": {"x": 1}}`, `{"a": [{"x": 1}, 5]}`, true},
	{`{"a": {}}`, `{"a": {}}`, true},
	{`{"a": {"$ref": "c", "$id": 1}}`, `{"a": {"$ref": "c", "$id": 1}}`, true},

	// Dotted paths.
	{`{"a.b": 1}`, `{"a": {"b": 1}}`, true},
	{`{"a.b": 1}`, `{"a": [{"b": 1}, {"b": 2}]}`, true},
	{`{"a.b": 2}`, `{"a": [{"b": 1}, {"b": 2}]}`, true},
	{`{"a.b": 3}`, `{"a": [{"b": 1}, {"b": 2}]}`, false},
	{`{"a.b": 1}`, `{"a": [{"b": [0, 1]}]}`, true},
	{`{"a.b": 1}`, `{"a": [[{"b": 1}]]}`, false},
	{`{"a.b.c": 1}`, `{"a": [{"b": [{"c": 1}]}]}`, true},
	{`{"a.0": 5}`, `{"a": [5, 6]}`, true},
	{`{"a.1": 5}`, `{"a": [5, 6]}`, false},
	{`{"a.0": 5}`, `{"a": [{"0": 5}]}`, true},
	{`{"a.0": 5}`, `{"a": {"0": 5}}`, true},
	{`{"a.0.b": 1}`, `{"a": [{"b": 1}]}`, true},
	{`{"a.1.b": 1}`, `{"a": [{"b": 1}, {"b": 2}]}`, false},
	{`{"a.1.b": 2}`, `{"a": [{"b": 1}, {"b": 2}]}`, true},
	{`{"a.0.0": 1}`, `{"a": [[1, 2]]}`, true},
	{`{"a.0": 1}`, `{"a": [[1, 2]]}`, false},
	{`{"a.b": 1}`, `{"a": 1}`, false},

	// Null: matches null, undefined and missing, and arrays holding null.
	{`{"a": null}`, `{"a": null}`, true},
	{`{"a": null}`, `{}`, true},
	{`{"a": null}`, `{"a": {"$undefined": true}}`, true},
	{`{"a": null}`, `{"a": 0}`, false},
	{`{"a": null}`, `{"a": [1, null]}`, true},
	{`{"a": null}`, `{"a": []}`, false},
	{`{"a": null}`, `{"a": [[]]}`, false},
	{`{"a.b": null}`, `{"a": 4}`, true},
	{`{"a.b": null}`, `{"a": {}}`, true},
	{`{"a.b": null}`, `{"a": {"b": "hi"}}`, false},
	{`{"a.b": null}`, `{"a": [{"b": 3}, {}]}`, true},
	{`{"a.b": null}`, `{"a": [1, "string", 4]}`, false},
	{`{"a.b": null}`, `{"a": []}`, false},
	{`{"a.b": null}`, `{"a": [{"b": 1}, {"b": 3}]}`, false},
	{`{"a": {"$ne": null}}`, `{}`, false},
	{`{"a": {"$ne": null}}`, `{"a": 4}`, true},
	{`{"a": {"$ne": null}}`, `{"a": [1, null]}`, false},
	{`{"a.b": {"$ne": null}}`, `{"a": [1, 2]}`, true},
	{`{"a": {"$gte": null}}`, `{}`, true},
	{`{"a": {"$lte": null}}`, `{"a": null}`, true},
	{`{"a": {"$gt": null}}`, `{"a": null}`, false},
	{`{"a": {"$lt": null}}`, `{}`, false},
	{`{"a": {"$in": [null, 4]}}`, `{}`, true},
	{`{"a": {"$in": [null, 4]}}`, `{"a": {"$undefined": true}}`, true},
	{`{"a": {"$nin": [null, 4]}}`, `{"a": 5}`, true},
	{`{"a": {"$nin": [null, 4]}}`, `{}`, false},

	// Comparisons stay inside the type bracket.
	{`{"a": {"$gt": 5}}`, `{"a": 6}`, true},
	{`{"a": {"$gt": 5}}`, `{"a": 5}`, false},
	{`{"a": {"$gt": 5}}`, `{"a": "6"}`, false},
	{`{"a": {"$gt": 5}}`, `{"a": "abc"}`, false},
	{`{"a": {"$gt": 5}}`, `{"a": [1, 7]}`, true},
	{`{"a": {"$gt": 5}}`, `{"a": [1, 2]}`, false},
	{`{"a": {"$gte": 5.5}}`, `{"a": {"$numberLong": "6"}}`, true},
	{`{"a": {"$lt": "b"}}`, `{"a": "a"}`, true},
	{`{"a": {"$lt": "b"}}`, `{"a": 1}`, false},
	{`{"a": {"$lt": {"$date": "2020-01-01T00:00:00Z"}}}`, `{"a": {"$date": "2019-01-01T00:00:00Z"}}`, true},
	{`{"a": {"$gt": 1, "$lt": 5}}`, `{"a": [0, 6]}`, true},
	{`{"a": {"$elemMatch": {"$gt": 1, "$lt": 5}}}`, `{"a": [0, 6]}`, false},
	{`{"a": {"$gt": {"$numberDouble": "NaN"}}}`, `{"a": 1}`, false},
	{`{"a": {"$lt": 1}}`, `{"a": {"$numberDouble": "NaN"}}`, false},
	{`{"a": {"$gte": {"$numberDouble": "NaN"}}}`, `{"a": {"$numberDouble": "NaN"}}`, true},
	{`{"a": {"$gt": {"$minKey": 1}}}`, `{"a": "x"}`, true},
	{`{"a": {"$gt": {"$minKey": 1}}}`, `{}`, true},
	{`{"a": {"$lt": {"$maxKey": 1}}}`, `{"a": {"x": 1}}`, true},
	{`{"a": {"$lt": {"$maxKey": 1}}}`, `{"a": {"$maxKey": 1}}`, false},
	{`{"a": {"$gt": [1]}}`, `{"a": [[2]]}`, true},
	{`{"a": {"$lt": {"x": 2}}}`, `{"a": {"x": 1}}`, true},
	{`{"a": {"$gt": {"$numberLong": "9007199254740992"}}}`, `{"a": {"$numberLong": "9007199254740993"}}`, true},
	{`{"a": {"$gt": 9007199254740992.0}}`, `{"a": {"$numberLong": "9007199254740993"}}`, true},
	{`{"a": {"$gt": {"$numberDecimal": "0.1"}}}`, `{"a": 0.1}`, true},

	// $ne, $in, $nin.
	{`{"a": {"$ne": 1}}`, `{"a": 2}`, true},
	{`{"a": {"$ne": 1}}`, `{}`, true},
	{`{"a": {"$ne": 1}}`, `{"a": [1, 2]}`, false},
	{`{"a": {"$in": [1, "x"]}}`, `{"a": "x"}`, true},
	{`{"a": {"$in": [1, "x"]}}`, `{"a": [5, 1]}`, true},
	{`{"a": {"$in": []}}`, `{"a": 1}`, false},
	{`{"a": {"$in": [{"$regularExpression": {"pattern": "^ab", "options": ""}}]}}`, `{"a": "abc"}`, true},
	{`{"a": {"$in": [[1, 2]]}}`, `{"a": [1, 2]}`, true},
	{`{"a": {"$nin": [1, 2]}}`, `{"a": 3}`, true},
	{`{"a": {"$nin": [1, 2]}}`, `{"a": [3, 2]}`, false},
	{`{"a": {"$nin": [1, 2]}}`, `{}`, true},

	// $exists.
	{`{"a": {"$exists": true}}`, `{"a": null}`, true},
	{`{"a": {"$exists": true}}`, `{}`, false},
	{`{"a": {"$exists": false}}`, `{}`, true},
	{`{"a": {"$exists": 0}}`, `{"a": 1}`, false},
	{`{"a.b": {"$exists": true}}`, `{"a": [{"b": 1}]}`, true},
	{`{"a.b": {"$exists": true}}`, `{"a": [1, 2]}`, false},
	{`{"a.b": {"$exists": false}}`, `{"a": [1, 2]}`, true},
	{`{"a.b": {"$exists": false}}`, `{"a": [{"c": 1}, {"b": 2}]}`, false},
	{`{"a": {"$exists": true}}`, `{"a": []}`, true},

	// $type.
	{`{"a": {"$type": "string"}}`, `{"a": "x"}`, true},
	{`{"a": {"$type": 2}}`, `{"a": "x"}`, true},
	{`{"a": {"$type": "number"}}`, `{"a": {"$numberDecimal": "1"}}`, true},
	{`{"a": {"$type": "int"}}`, `{"a": 1.0}`, false},
	{`{"a": {"$type": "double"}}`, `{"a": 1.5}`, true},
	{`{"a": {"$type": "long"}}`, `{"a": {"$numberLong": "1"}}`, true},
	{`{"a": {"$type": "array"}}`, `{"a": []}`, true},
	{`{"a": {"$type": "array"}}`, `{"a": 1}`, false},
	{`{"a": {"$type": "int"}}`, `{"a": ["x", 1]}`, true},
	{`{"a": {"$type": "null"}}`, `{}`, false},
	{`{"a": {"$type": "null"}}`, `{"a": null}`, true},
	{`{"a": {"$type": ["string", "bool"]}}`, `{"a": true}`, true},
	{`{"a": {"$type": "object"}}`, `{"a": {"b": 1}}`, true},
	{`{"a": {"$type": "minKey"}}`, `{"a": {"$minKey": 1}}`, true},
	{`{"a": {"$type": -1}}`, `{"a": {"$minKey": 1}}`, true},

	// $size.
	{`{"a": {"$size": 2}}`, `{"a": [1, 2]}`, true},
	{`{"a": {"$size": 1}}`, `{"a": [[1, 2]]}`, true},
	{`{"a": {"$size": 2}}`, `{"a": [[1, 2]]}`, false},
	{`{"a": {"$size": 0}}`, `{"a": []}`, true},
	{`{"a": {"$size": 0}}`, `{}`, false},
	{`{"a": {"$size": 1}}`, `{"a": "x"}`, false},
	{`{"a.b": {"$size": 1}}`, `{"a": [{"b": [1]}, {"b": [1, 2]}]}`, true},

	// $all.
	{`{"a": {"$all": [1, 2]}}`, `{"a": [2, 3, 1]}`, true},
	{`{"a": {"$all": [1, 2]}}`, `{"a": [1, 3]}`, false},
	{`{"a": {"$all": [1]}}`, `{"a": 1}`, true},
	{`{"a": {"$all": []}}`, `{"a": []}`, false},
	{`{"a": {"$all": [[1, 2]]}}`, `{"a": [[1, 2], 3]}`, true},
	{`{"a": {"$all": [[1, 2]]}}`, `{"a": [1, 2]}`, true},
	{`{"a": {"$all": [{"$regularExpression": {"pattern": "^x", "options": ""}}, "yz"]}}`, `{"a": ["xa", "yz"]}`, true},
	{`{"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"c": 2}}]}}`, `{"a": [{"b": 1}, {"c": 2}]}`, true},
	{`{"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"c": 3}}]}}`, `{"a": [{"b": 1}, {"c": 2}]}`, false},

	// $elemMatch.
	{`{"a": {"$elemMatch": {"$gte": 80, "$lt": 85}}}`, `{"a": [82, 90]}`, true},
	{`{"a": {"$elemMatch": {"$gte": 80, "$lt": 85}}}`, `{"a": [79, 90]}`, false},
	{`{"a": {"$elemMatch": {"$gte": 80}}}`, `{"a": 82}`, false},
	{`{"a": {"$elemMatch": {"b": 1, "c": {"$gt": 2}}}}`, `{"a": [{"b": 1, "c": 1}, {"b": 2, "c": 3}]}`, false},
	{`{"a": {"$elemMatch": {"b": 1, "c": {"$gt": 2}}}}`, `{"a": [{"b": 1, "c": 3}]}`, true},
	{`{"a.b": 1, "a.c": {"$gt": 2}}`, `{"a": [{"b": 1, "c": 1}, {"b": 2, "c": 3}]}`, true},
	{`{"a": {"$elemMatch": {"b": null}}}`, `{"a": [[]]}`, true},
	{`{"a": {"$elemMatch": {"b": null}}}`, `{"a": [1, 2]}`, false},
	{`{"a": {"$elemMatch": {"0": 5}}}`, `{"a": [[5]]}`, true},
	{`{"a": {"$elemMatch": {"$eq": null}}}`, `{"a": [1, null]}`, true},
	{`{"a": {"$elemMatch": {"$ne": null}}}`, `{"a": [null]}`, false},
	{`{"a": {"$elemMatch": {"$or": [{"b": 1}, {"c": 1}]}}}`, `{"a": [{"c": 1}]}`, true},
	{`{"a": {"$elemMatch": {"$elemMatch": {"$eq": 1}}}}`, `{"a": [[2, 1]]}`, true},
	{`{"a": {"$elemMatch": {"$not": {"$gt": 5}}}}`, `{"a": [6, 7]}`, false},
	{`{"a": {"$elemMatch": {"$not": {"$gt": 5}}}}`, `{"a": [6, 2]}`, true},
	{`{"a": {"$elemMatch": {}}}`, `{"a": [{"x": 1}]}`, true},
	{`{"a": {"$elemMatch": {}}}`, `{"a": [1]}`, false},

	// $regex.
	{`{"a": {"$regex": "^ab"}}`, `{"a": "abc"}`, true},
	{`{"a": {"$regex": "^ab"}}`, `{"a": "cab"}`, false},
	{`{"a": {"$regex": "AB", "$options": "i"}}`, `{"a": "xaby"}`, true},
	{`{"a": {"$regularExpression": {"pattern": "AB", "options": "i"}}}`, `{"a": "ab"}`, true},
	{`{"a": {"$regex": {"$regularExpression": {"pattern": "AB", "options": ""}}, "$options": "i"}}`, `{"a": "ab"}`, true},
	{`{"a": {"$regex": "^b", "$options": "m"}}`, `{"a": "a\nb"}`, true},
	{`{"a": {"$regex": "^b"}}`, `{"a": "a\nb"}`, false},
	{`{"a": {"$regex": "a.b", "$options": "s"}}`, `{"a": "a\nb"}`, true},
	{`{"a": {"$regex": "a.b"}}`, `{"a": "a\nb"}`, false},
	{`{"a": {"$regex": " a b # comment\n c", "$options": "x"}}`, `{"a": "abc"}`, true},
	{`{"a": {"$regex": "a\\ b", "$options": "x"}}`, `{"a": "a b"}`, true},
	{`{"a": {"$regex": "[ ]x", "$options": "x"}}`, `{"a": " x"}`, true},
	{`{"a": {"$regex": "c$"}}`, `{"a": "abc\n"}`, true},
	{`{"a": {"$regex": "c$"}}`, `{"a": "abc\nd"}`, false},
	{`{"a": {"$regex": "[$]"}}`, `{"a": "x$"}`, true},
	{`{"a": {"$regex": "c\\Z"}}`, `{"a": "abc\n"}`, true},
	{`{"a": {"$regex": "c\\Z"}}`, `{"a": "abcd"}`, false},
	{`{"a": {"$regex": "(?m)b$"}}`, `{"a": "ab\nc"}`, true},
	{`{"a": {"$regex": "b$"}}`, `{"a": "ab\nc"}`, false},
	{`{"a": {"$regex": "b"}}`, `{"a": ["a", "b"]}`, true},
	{`{"a": {"$regex": "1"}}`, `{"a": 1}`, false},
	{`{"a": {"$regex": "x"}}`, `{"a": {"$symbol": "x"}}`, true},
	{`{"a": {"$regex": "x"}}`, `{"a": {"$regularExpression": {"pattern": "x", "options": ""}}}`, true},
	{`{"a": {"$regex": "x"}}`, `{"a": {"$regularExpression": {"pattern": "x", "options": "i"}}}`, false},
	{`{"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}}`, `{"a": "x"}`, false},
	{`{"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}}`, `{"a": {"$regularExpression": {"pattern": "x", "options": ""}}}`, true},
	{`{"a": {"$regex": "a\\.b"}}`, `{"a": "a.b"}`, true},
	{`{"a": {"$regex": "a\\.b"}}`, `{"a": "axb"}`, false},
	{`{"a": {"$regex": "[a\\-c]"}}`, `{"a": "b"}`, false},
	{`{"a": {"$regex": "é"}}`, `{"a": "café"}`, true},

	// $not.
	{`{"a": {"$not": {"$gt": 5}}}`, `{"a": 3}`, true},
	{`{"a": {"$not": {"$gt": 5}}}`, `{}`, true},
	{`{"a": {"$not": {"$gt": 5}}}`, `{"a": "x"}`, true},
	{`{"a": {"$not": {"$gt": 5}}}`, `{"a": [1, 6]}`, false},
	{`{"a": {"$not": {"$regularExpression": {"pattern": "^x", "options": ""}}}}`, `{"a": "xy"}`, false},
	{`{"a": {"$not": {"$regularExpression": {"pattern": "^x", "options": ""}}}}`, `{"a": "yx"}`, true},
	{`{"a": {"$not": {"$regex": "^x"}}}`, `{"a": "yx"}`, true},
	{`{"a": {"$not": {"$gte": null}}}`, `{"a": []}`, true},
	{`{"a": {"$not": {"$gte": null}}}`, `{"a": [1, null]}`, false},

	// $and, $or, $nor.
	{`{"$and": [{"a": 1}, {"b": 2}]}`, `{"a": 1, "b": 2}`, true},
	{`{"$and": [{"a": 1}, {"b": 2}]}`, `{"a": 1}`, false},
	{`{"$or": [{"a": 1}, {"b": 2}]}`, `{"b": 2}`, true},
	{`{"$or": [{"a": 1}, {"b": 2}]}`, `{"c": 2}`, false},
	{`{"$nor": [{"a": 1}, {"b": 2}]}`, `{"c": 2}`, true},
	{`{"$nor": [{"a": 1}, {"b": 2}]}`, `{"a": 1}`, false},
	{`{"$nor": [{"a": {"$exists": false}}]}`, `{"a": null}`, true},
	{`{"$or": [{"a": 1}], "b": 2}`, `{"a": 1, "b": 3}`, false},
	{`{"$and": [{"$or": [{"a": 1}, {"a": 2}]}, {"$or": [{"b": 1}, {"b": 2}]}]}`, `{"a": 2, "b": 1}`, true},
	{`{"$alwaysFalse": 1}`, `{}`, false},
	{`{"$alwaysTrue": 1}`, `{}`, true},
	{`{"$comment": "anything", "a": 1}`, `{"a": 1}`, true},

	// $mod.
	{`{"a": {"$mod": [4, 0]}}`, `{"a": 8}`, true},
	{`{"a": {"$mod": [4, 0]}}`, `{"a": 9}`, false},
	{`{"a": {"$mod": [4, 1]}}`, `{"a": 9.9}`, true},
	{`{"a": {"$mod": [4, -1]}}`, `{"a": -5}`, true},
	{`{"a": {"$mod": [4, 0]}}`, `{"a": "8"}`, false},
	{`{"a": {"$mod": [4, 0]}}`, `{"a": {"$numberDouble": "NaN"}}`, false},
	{`{"a": {"$mod": [4.5, 0]}}`, `{"a": 8}`, true},
	{`{"a": {"$mod": [3, 1]}}`, `{"a": [5, 7]}`, true},
	{`{"a": {"$mod": [-1, 0]}}`, `{"a": {"$numberLong": "-9223372036854775808"}}`, true},
	{`{"a": {"$mod": [10, 3]}}`, `{"a": {"$numberDecimal": "13.9"}}`, true},
}

func TestMatch(t *testing.T) {
	for _, c := range matchCases {
		f, err := ParseFilter(ej(t, c.filter))
		if err != nil {
			t.Errorf("ParseFilter(%s): %v", c.filter, err)
			continue
		}
		if got := f.Match(ej(t, c.doc)); got != c.want {
			t.Errorf("filter %s on %s: got %v, want %v", c.filter, c.doc, got, c.want)
		}
	}
	if len(matchCases) < 80 {
		t.Fatalf("only %d cases", len(matchCases))
	}
}

func TestMatchDuplicateFieldUsesFirst(t *testing.T) {
	f, err := ParseFilter(bson.D{{Key: "a", Value: int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	doc := bson.D{{Key: "a", Value: int32(2)}, {Key: "a", Value: int32(1)}}
	if f.Match(doc) {
		t.Error("matched the second of two fields called a")
	}
}

func TestEqualities(t *testing.T) {
	cases := []struct{ filter, want string }{
		{`{"a": 1, "b": {"$gt": 2}, "c": {"$eq": "x"}}`, `{"a": 1, "c": "x"}`},
		{`{"$and": [{"x.y": 3}, {"$and": [{"z": [1, 2]}]}], "a": {"k": 1}}`, `{"x.y": 3, "z": [1, 2], "a": {"k": 1}}`},
		{`{"a": {"$regularExpression": {"pattern": "x", "options": ""}}, "b": {"$in": [1]}}`, `{}`},
		{`{"$or": [{"a": 1}]}`, `{"a": 1}`},
		{`{"$or": [{"a": 1}, {"b": 2}]}`, `{}`},
		{`{"a": 1, "$and": [{"a": 2}]}`, `{"a": 1}`},
		{`{"a": {"$eq": 1, "$lt": 5}}`, `{"a": 1}`},
		{`{"a": {"$eq": {"$gt": 1}}}`, `{}`},
		{`{"a": null}`, `{"a": null}`},
	}
	for _, c := range cases {
		f, err := ParseFilter(ej(t, c.filter))
		if err != nil {
			t.Fatalf("ParseFilter(%s): %v", c.filter, err)
		}
		got, want := f.Equalities(), ej(t, c.want)
		if len(got) != len(want) || (len(got) > 0 && Compare(got, want) != 0) {
			t.Errorf("Equalities(%s) = %v, want %v", c.filter, got, want)
		}
	}
}

func TestElementMatcher(t *testing.T) {
	cases := []struct {
		cond string // a document {"c": <condition>}
		v    string // a document {"v": <value>}
		want bool
	}{
		{`{"c": {"$gte": 6}}`, `{"v": 7}`, true},
		{`{"c": {"$gte": 6}}`, `{"v": 5}`, false},
		{`{"c": {"$in": ["a", "b"]}}`, `{"v": "b"}`, true},
		{`{"c": {"item": "B"}}`, `{"v": {"item": "B", "score": 8}}`, true},
		{`{"c": {"item": "B"}}`, `{"v": {"item": "C"}}`, false},
		{`{"c": {"item": "B"}}`, `{"v": "B"}`, false},
		{`{"c": 3}`, `{"v": 3.0}`, true},
		{`{"c": [1, 2]}`, `{"v": [1, 2]}`, true},
		{`{"c": [1, 2]}`, `{"v": 1}`, false},
		{`{"c": {"$regularExpression": {"pattern": "^a", "options": ""}}}`, `{"v": "abc"}`, true},
		{`{"c": null}`, `{"v": null}`, true},
	}
	for _, c := range cases {
		m, err := ElementMatcher(ej(t, c.cond)[0].Value)
		if err != nil {
			t.Fatalf("ElementMatcher(%s): %v", c.cond, err)
		}
		if got := m(ej(t, c.v)[0].Value); got != c.want {
			t.Errorf("ElementMatcher(%s)(%s) = %v, want %v", c.cond, c.v, got, c.want)
		}
	}
	if _, err := ElementMatcher(bson.D{{Key: "$bogus", Value: 1}}); err == nil {
		t.Error("ElementMatcher accepted an unknown operator")
	}
}
