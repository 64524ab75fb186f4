package godriver

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Many clients increment one document at once: every update applies once
// and none is refused, however often its compare-and-swap loses (an update
// that keeps losing locks the row and takes its turn).
func TestContendedUpdatesOfOneDocumentAllApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	coll := startTierdb(t, ctx).Database("hot").Collection("counter")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 250, 24
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				r, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				if err == nil && r.ModifiedCount != 1 {
					t.Errorf("an update modified %d documents", r.ModifiedCount)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 3 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d updates failed", n, workers*each)
	}
	var doc struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.N != workers*each {
		t.Fatalf("n = %d after %d increments", doc.N, workers*each)
	}
}
