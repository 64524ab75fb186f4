package bsonx

import (
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestMaxDocumentSizeIsDriverLimit(t *testing.T) {
	if maxDocumentSize != math.MaxInt32 {
		t.Fatalf("maxDocumentSize = %d, want the int32 limit the driver enforces", maxDocumentSize)
	}
}

// TestSizeLimit lowers the limit to check the boundary without gigabytes:
// a document of exactly max bytes passes, one byte more fails, wherever
// the growth is.
func TestSizeLimit(t *testing.T) {
	// {s: "<n bytes>"} takes 4 + 1 + 2 + 4 + n + 1 + 1 = 13 + n bytes.
	const max = 64
	fits := bson.D{{Key: "s", Value: strings.Repeat("x", max-13)}}
	b, err := encoder{max: max}.elements(nil, fits, nil)
	if err != nil || len(b) != max {
		t.Fatalf("document of %d bytes: %d bytes, %v", max, len(b), err)
	}
	for name, d := range map[string]bson.D{
		"top level": {{Key: "s", Value: strings.Repeat("x", max-12)}},
		"nested":    {{Key: "d", Value: bson.D{{Key: "s", Value: strings.Repeat("x", max)}}}},
		"in array":  {{Key: "a", Value: bson.A{strings.Repeat("x", max)}}},
	} {
		_, err := encoder{max: max}.elements(nil, d, nil)
		if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.BSONObjectTooLarge {
			t.Errorf("%s: error %v, want BSONObjectTooLarge", name, err)
		}
	}
}
