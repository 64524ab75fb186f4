package query

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestParseFilterErrors(t *testing.T) {
	cases := []struct {
		filter string
		code   mongoerr.Code
		msg    string
	}{
		{`{"a": {"$foo": 1}}`, mongoerr.BadValue, "unknown operator: $foo"},
		{`{"$foo": 1}`, mongoerr.BadValue, "unknown top level operator: $foo"},
		{`{"a": {"$gt": 1, "b": 2}}`, mongoerr.BadValue, "unknown operator: b"},
		{`{"a": {"$in": 1}}`, mongoerr.BadValue, "$in needs an array"},
		{`{"a": {"$nin": {"x": 1}}}`, mongoerr.BadValue, "$nin needs an array"},
		{`{"a": {"$in": [{"$gt": 1}]}}`, mongoerr.BadValue, "cannot nest $ under $in"},
		{`{"a": {"$in": [{"$undefined": true}]}}`, mongoerr.BadValue, "cannot be undefined"},
		{`{"$and": 1}`, mongoerr.BadValue, "$and must be an array"},
		{`{"$or": []}`, mongoerr.BadValue, "$and/$or/$nor must be a nonempty array"},
		{`{"$nor": [1]}`, mongoerr.BadValue, "$or/$and/$nor entries need to be full objects"},
		{`{"$and": [{"a": {"$bad": 1}}]}`, mongoerr.BadValue, "unknown operator: $bad"},
		{`{"a": {"$all": 1}}`, mongoerr.BadValue, "$all needs an array"},
		{`{"a": {"$all": [{"$elemMatch": {"b": 1}}, 2]}}`, mongoerr.BadValue, "$all/$elemMatch has to be consistent"},
		{`{"a": {"$all": [1, {"$gt": 2}]}}`, mongoerr.BadValue, "no $ expressions in $all"},
		{`{"a": {"$elemMatch": 1}}`, mongoerr.BadValue, "$elemMatch needs an Object"},
		{`{"a": {"$elemMatch": {"$foo": 1}}}`, mongoerr.BadValue, "unknown operator: $foo"},
		{`{"a": {"$not": 1}}`, mongoerr.BadValue, "$not needs a regex or a document"},
		{`{"a": {"$not": {}}}`, mongoerr.BadValue, "$not cannot be empty"},
		{`{"a": {"$size": "x"}}`, mongoerr.BadValue, "$size needs a number"},
		{`{"a": {"$size": 1.5}}`, mongoerr.BadValue, "$size must be a whole number"},
		{`{"a": {"$size": -1}}`, mongoerr.BadValue, "$size may not be negative"},
		{`{"a": {"$type": "strung"}}`, mongoerr.BadValue, "Unknown type name alias: strung"},
		{`{"a": {"$type": 99}}`, mongoerr.BadValue, "Invalid numerical type code: 99"},
		{`{"a": {"$type": 2.5}}`, mongoerr.BadValue, "Invalid numerical type code: 2.5"},
		{`{"a": {"$type": []}}`, mongoerr.BadValue, "at least one type"},
		{`{"a": {"$type": {}}}`, mongoerr.BadValue, "type must be represented as a number or a string"},
		{`{"a": {"$regex": 1}}`, mongoerr.BadValue, "$regex has to be a string"},
		{`{"a": {"$options": "i"}}`, mongoerr.BadValue, "$options needs a $regex"},
		{`{"a": {"$regex": "x", "$options": 1}}`, mongoerr.BadValue, "$options has to be a string"},
		{`{"a": {"$regex": {"$regularExpression": {"pattern": "x", "options": "i"}}, "$options": "m"}}`, mongoerr.BadValue, "options set in both $regex and $options"},
		{`{"a": {"$regex": "x", "$options": "q"}}`, mongoerr.BadValue, "invalid flag in regex options: q"},
		{`{"a": {"$regex": "(?=x)"}}`, mongoerr.BadValue, "Regular expression is invalid"},
		{`{"a": {"$regex": "(x"}}`, mongoerr.BadValue, "Regular expression is invalid"},
		{`{"a": {"$regex": "a\u0000b"}}`, mongoerr.BadValue, "embedded null byte"},
		{`{"a": {"$regularExpression": {"pattern": "(", "options": ""}}}`, mongoerr.BadValue, "Regular expression is invalid"},
		{`{"a": {"$gt": {"$regularExpression": {"pattern": "x", "options": ""}}}}`, mongoerr.BadValue, "Can't have RegEx as arg to predicate over field 'a'."},
		{`{"a": {"$ne": {"$regularExpression": {"pattern": "x", "options": ""}}}}`, mongoerr.BadValue, "Can't have regex as arg to $ne."},
		{`{"a": {"$undefined": true}}`, mongoerr.BadValue, "cannot compare to undefined"},
		{`{"a": {"$lt": {"$undefined": true}}}`, mongoerr.BadValue, "cannot compare to undefined"},
		{`{"a": {"$mod": 1}}`, mongoerr.BadValue, "malformed mod, needs to be an array"},
		{`{"a": {"$mod": [1]}}`, mongoerr.BadValue, "malformed mod, not enough elements"},
		{`{"a": {"$mod": [1, 2, 3]}}`, mongoerr.BadValue, "malformed mod, too many elements"},
		{`{"a": {"$mod": ["x", 2]}}`, mongoerr.BadValue, "malformed mod, divisor not a number"},
		{`{"a": {"$mod": [2, "x"]}}`, mongoerr.BadValue, "malformed mod, remainder not a number"},
		{`{"a": {"$mod": [0, 1]}}`, mongoerr.BadValue, "divisor cannot be 0"},
		{`{"a": {"$mod": [{"$numberDouble": "NaN"}, 1]}}`, mongoerr.BadValue, "divisor value is invalid"},
		{`{"$alwaysTrue": 2}`, mongoerr.BadValue, "$alwaysTrue must be an integer value of 1"},
		{`{"$where": "true"}`, mongoerr.NotImplemented, "$where is not supported"},
		{`{"$expr": {"$eq": [1, 1]}}`, mongoerr.NotImplemented, "$expr is not supported"},
		{`{"a": {"$bitsAllSet": "x"}}`, mongoerr.BadValue, `a takes an Array, a number, or a BinData but received: $bitsAllSet: "x"`},
		{`{"a": {"$bitsAllClear": 1.2}}`, mongoerr.FailedToParse, "Expected an integer: $bitsAllClear: 1.2"},
		{`{"a": {"$bitsAnySet": -1}}`, mongoerr.FailedToParse, "Expected a non-negative number in: $bitsAnySet: -1"},
		{`{"a": {"$bitsAnySet": [1, -1]}}`, mongoerr.FailedToParse, "Failed to parse bit position. Expected a non-negative number in: 1: -1"},
		{`{"a": {"$bitsAnySet": [true]}}`, mongoerr.BadValue, "Failed to parse bit position. Expected a number in: 0: true"},
		{`{"a": {"$bitsAnyClear": [1.5]}}`, mongoerr.FailedToParse, "Failed to parse bit position. Expected an integer: 0: 1.5"},
		{`{"a": {"$near": [0, 0]}}`, mongoerr.NotImplemented, "$near is not supported"},
	}
	for _, c := range cases {
		_, err := ParseFilter(ej(t, c.filter))
		e, ok := mongoerr.As(err)
		if !ok {
			t.Errorf("ParseFilter(%s) = %v, want a mongoerr", c.filter, err)
			continue
		}
		if e.Code != c.code || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("ParseFilter(%s) = %d %q, want %d containing %q", c.filter, e.Code, e.Msg, c.code, c.msg)
		}
	}
}

func TestParseFilterAccepts(t *testing.T) {
	ok := []string{
		`{}`,
		`{"a": {"$exists": "yes"}}`,
		`{"a": {"$type": [1, "string", "number"]}}`,
		`{"a": {"$size": {"$numberLong": "2"}}}`,
		`{"a": {"$size": 2.0}}`,
		`{"a": {"$mod": [2.9, -1.9]}}`,
		`{"a": {"$ref": "x", "$id": 1}}`,
		`{"a": {"$elemMatch": {"$and": [{"b": 1}]}}}`,
		`{"a": {"$regex": "(?i)x", "$options": ""}}`,
		`{"a": {"$regex": "x", "$options": "imsxu"}}`,
	}
	for _, s := range ok {
		if _, err := ParseFilter(ej(t, s)); err != nil {
			t.Errorf("ParseFilter(%s): %v", s, err)
		}
	}
}

func TestParseFilterNil(t *testing.T) {
	f, err := ParseFilter(nil)
	if err != nil || !f.Match(bson.D{{Key: "x", Value: int32(1)}}) {
		t.Fatalf("nil filter: %v", err)
	}
	if w, args := f.SQL([]KeyColumn{{Column: "_id", Fields: []string{"_id"}}}, 1); w != "TRUE" || args != nil {
		t.Fatalf("nil filter SQL = %q %v", w, args)
	}
}
