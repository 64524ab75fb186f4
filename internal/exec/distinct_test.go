package exec

import (
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestDistinctValues(t *testing.T) {
	d := NewDistinct("a.b")
	for _, doc := range []bson.D{
		{{Key: "a", Value: bson.D{{Key: "b", Value: int32(2)}}}},
		{{Key: "a", Value: bson.D{{Key: "b", Value: 2.0}}}},                                // equal to 2: once
		{{Key: "a", Value: bson.D{{Key: "b", Value: bson.A{int32(1), bson.A{int32(9)}}}}}}, // unwound one level
		{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: "x"}}, bson.D{{Key: "c", Value: int32(5)}}}}},
		{{Key: "a", Value: bson.D{{Key: "b", Value: nil}}}}, // null is a value
		{{Key: "z", Value: int32(1)}},                       // missing: none
	} {
		if err := d.Push(doc); err != nil {
			t.Fatal(err)
		}
	}
	want := bson.A{nil, int32(1), int32(2), "x", bson.A{int32(9)}}
	if got := d.Values(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := NewDistinct("a").Values(); got == nil || len(got) != 0 {
		t.Fatalf("no values: %#v", got)
	}
}

func TestDistinctSizeCap(t *testing.T) {
	old := maxDistinctBytes
	maxDistinctBytes = 100
	defer func() { maxDistinctBytes = old }()
	d := NewDistinct("a")
	var err error
	for i := int32(0); i < 20 && err == nil; i++ {
		err = d.Push(bson.D{{Key: "a", Value: i}})
	}
	if !isCode(err, mongoerr.Location17217) {
		t.Fatalf("past the cap: %v", err)
	}
}
