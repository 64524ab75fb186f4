package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

func TestCheckHint(t *testing.T) {
	col := &storage.Collection{Indexes: []storage.Index{
		{Name: "_id_", Keys: []storage.IndexKey{{Field: "_id"}}, Column: "_id", Unique: true},
		{Name: "a_1_b_-1", Keys: []storage.IndexKey{{Field: "a"}, {Field: "b", Desc: true}}},
		{Name: "h", Keys: []storage.IndexKey{{Field: "c"}}, Hidden: true},
		{Name: "hashed", Keys: []storage.IndexKey{{Field: "d", Hashed: true}}},
	}}
	for _, c := range []struct {
		hint any
		ok   bool
	}{
		{"_id_", true},
		{"a_1_b_-1", true},
		{bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: -1.0}}, true},
		{bson.D{{Key: "a", Value: int64(1)}, {Key: "b", Value: int32(-1)}}, true},
		{bson.D{{Key: "d", Value: "hashed"}}, true},
		{bson.D{{Key: "$natural", Value: int32(-1)}}, true},
		{"nope", false},
		{bson.D{{Key: "a", Value: int32(1)}}, false},
		{bson.D{{Key: "b", Value: int32(-1)}, {Key: "a", Value: int32(1)}}, false},
		{bson.D{{Key: "d", Value: int32(1)}}, false},
		{"h", false}, // hidden
		{bson.D{{Key: "c", Value: int32(1)}}, false},
		{bson.D{{Key: "$natural", Value: int32(2)}}, false},
	} {
		err := checkHint(col, c.hint)
		if c.ok != (err == nil) {
			t.Errorf("%v: %v", c.hint, err)
		}
		if err != nil {
			if me, _ := mongoerr.As(err); me == nil || me.Code != mongoerr.BadValue {
				t.Errorf("%v: %v is not BadValue", c.hint, err)
			}
		}
	}
	for _, h := range []any{nil, "", bson.D{}} {
		if !noHint(h) {
			t.Errorf("%v asks for an index", h)
		}
	}
	if err := hintType(int32(1)); err == nil {
		t.Error("a number as a hint")
	}
}
