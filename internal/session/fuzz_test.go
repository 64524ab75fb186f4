package session

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// FuzzParseLSID: whatever a client sends as lsid, ParseLSID returns a
// 16-byte id or a MongoDB error, and never panics.
func FuzzParseLSID(f *testing.F) {
	for _, v := range []any{
		bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("0123456789abcdef")}}},
		bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("0123")}}, {Key: "uid", Value: bson.Binary{Data: []byte("x")}}},
		bson.D{{Key: "id", Value: "text"}},
		bson.D{},
	} {
		b, err := bson.Marshal(bson.D{{Key: "lsid", Value: v}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d bson.D
		if bson.Unmarshal(b, &d) != nil || len(d) == 0 {
			return
		}
		id, err := ParseLSID(d[0].Value)
		if err != nil {
			if _, ok := mongoerr.As(err); !ok {
				t.Fatalf("ParseLSID error %v is not a MongoDB error", err)
			}
			return
		}
		if len(id) != 16 {
			t.Fatalf("ParseLSID accepted a %d-byte id", len(id))
		}
	})
}
