package exec

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
)

func TestExpiryDeletesWhatExpiredInBatches(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := bson.NewDateTimeFromTime(now.Add(-2 * time.Hour))
	fresh := bson.NewDateTimeFromTime(now.Add(-30 * time.Minute))
	docs := []bson.D{
		{{Key: "_id", Value: int32(1)}, {Key: "at", Value: old}},
		{{Key: "_id", Value: int32(2)}, {Key: "at", Value: fresh}},
		{{Key: "_id", Value: int32(3)}, {Key: "at", Value: "not a date"}},
		{{Key: "_id", Value: int32(4)}, {Key: "at", Value: bson.A{fresh, old}}}, // the earliest decides
		{{Key: "_id", Value: int32(5)}, {Key: "at", Value: old}, {Key: "keep", Value: true}},
		{{Key: "_id", Value: int32(6)}, {Key: "at", Value: old}},
		{{Key: "_id", Value: int32(7)}},
	}
	f := newFakeStore(t, docs...)
	secs := int64(3600)
	partial := mustMarshal(t, bson.D{{Key: "keep", Value: bson.D{{Key: "$exists", Value: false}}}})
	ix := &storage.Index{Name: "at_1", Keys: []storage.IndexKey{{Field: "at"}}, Column: "k_at", ExpireAfterSeconds: &secs, Partial: partial}
	admitted, released := 0, 0
	var counted int64
	e := &Expiry{
		Store: f, TTL: storage.TTLIndex{Col: testCol(*ix), Index: ix}, Batch: 2,
		Admit:   func(context.Context) (func(), error) { admitted++; return func() { released++ }, nil },
		Deleted: func(n int64) { counted += n },
	}
	n, err := e.Run(context.Background(), now)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 3 || counted != 3 || len(got) != 4 || got[0] != 2 || got[1] != 3 || got[2] != 5 || got[3] != 7 {
		t.Fatalf("deleted %d (counted %d), left %v; want 1, 4 and 6 deleted", n, counted, got)
	}
	// Seven rows in batches of two: four batches, each admitted and released.
	if admitted != 4 || released != 4 {
		t.Fatalf("%d batches admitted, %d released", admitted, released)
	}
}
