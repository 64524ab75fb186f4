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

// Deletes with limit 1 race updaters that keep changing the documents they
// match: every delete removes exactly one document, none is refused, and
// what is left is what was not deleted (a delete that keeps losing its
// document to concurrent changes locks it, as an update does).
func TestContendedDeleteOneAllApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	coll := startTierdb(t, ctx).Database("hot").Collection("queue")
	const docs, deleters, each, updaters = 2000, 50, 20, 100
	batch := make([]any, docs)
	for i := range batch {
		batch[i] = bson.D{{Key: "_id", Value: i}, {Key: "ready", Value: true}, {Key: "n", Value: 0}}
	}
	if _, err := coll.InsertMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var upd sync.WaitGroup
	for range updaters {
		upd.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// The lowest _ids are what the deletes match first.
				if _, err := coll.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 50}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	failed := make(chan error, deleters*each)
	for range deleters {
		wg.Go(func() {
			for range each {
				r, err := coll.DeleteOne(ctx, bson.D{{Key: "ready", Value: true}})
				switch {
				case err != nil:
					failed <- err
				case r.DeletedCount != 1:
					t.Errorf("a delete removed %d documents", r.DeletedCount)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	upd.Wait()
	close(failed)
	n := 0
	for err := range failed {
		if n++; n <= 3 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d deletes failed", n, deleters*each)
	}
	left, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if left != docs-deleters*each {
		t.Fatalf("%d documents left, want %d", left, docs-deleters*each)
	}
}
