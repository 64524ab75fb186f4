package exec

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

func cappedCol() *storage.Collection {
	col := testCol()
	col.Capped = &storage.Capped{Size: 4096}
	return col
}

func TestTailReadsOnFromItsPosition(t *testing.T) {
	ctx := context.Background()
	docs := numbered(5, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(10 - i)}, {Key: "a", Value: int32(i)}} })
	st := newFakeStore(t, docs...)
	odd := spec(t, bson.D{{Key: "a", Value: bson.D{{Key: "$mod", Value: bson.A{int32(2), int32(1)}}}}}, nil, bson.D{{Key: "_id", Value: int32(1)}}, 0, 0)
	src := (&Read{Store: st, Col: cappedCol(), Spec: odd}).Tail(false, nil)
	if src.Positioned() {
		t.Fatal("positioned before reading")
	}
	var got []any
	for range 3 {
		batch, done, err := src.Next(ctx, storage.On{}, 1)
		if err != nil || done {
			t.Fatalf("done %v, %v", done, err)
		}
		for _, raw := range batch {
			got = append(got, raw.Lookup("_id").Int32())
			if len(raw.Lookup("a").Value) != 0 {
				t.Fatal("the projection was not applied")
			}
		}
	}
	// Insertion order, not _id order; at the end, nothing and not done.
	if want := []any{int32(9), int32(7)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	st.append(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(7)}})
	st.append(t, bson.D{{Key: "_id", Value: int32(2)}, {Key: "a", Value: int32(8)}})
	batch, _, err := src.Next(ctx, storage.On{}, 0)
	if err != nil || len(batch) != 1 || batch[0].Lookup("_id").Int32() != 1 {
		t.Fatalf("after two inserts: %v, %v", batch, err)
	}

	// The row at the position evicted: the position is lost.
	st.Rows = st.Rows[len(st.Rows)-1:]
	st.append(t, bson.D{{Key: "_id", Value: int32(3)}, {Key: "a", Value: int32(9)}})
	st.Rows = st.Rows[1:]
	if _, _, err := src.Next(ctx, storage.On{}, 0); !isCode(err, mongoerr.CappedPositionLost) {
		t.Fatalf("lost position: %v", err)
	}
}

func isCode(err error, c mongoerr.Code) bool {
	me, ok := mongoerr.As(err)
	return ok && me.Code == c
}

func TestTailAwaitsData(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}})
	waits := 0
	// The wait itself inserts, as another client would meanwhile: the
	// insert wakes the cursor, which returns the new document.
	idle := func(_ context.Context, wait func()) error {
		waits++
		st.append(t, bson.D{{Key: "_id", Value: int32(2)}})
		wait()
		return nil
	}
	src := (&Read{Store: st, Col: cappedCol(), Spec: spec(t, nil, nil, nil, 0, 0)}).Tail(true, idle)
	if !src.AwaitData() {
		t.Fatal("not awaitData")
	}
	if batch, _, err := src.Next(ctx, storage.On{}, 0); err != nil || len(batch) != 1 || !src.Positioned() {
		t.Fatalf("first batch %v, %v", batch, err)
	}
	// Without WithAwait (a first batch) it does not wait.
	if batch, _, err := src.Next(ctx, storage.On{}, 0); err != nil || len(batch) != 0 || waits != 0 {
		t.Fatalf("without await: %v, %v, %d waits", batch, err, waits)
	}
	batch, _, err := src.Next(WithAwait(ctx, time.Minute), storage.On{}, 0)
	if err != nil || len(batch) != 1 || batch[0].Lookup("_id").Int32() != 2 || waits != 1 {
		t.Fatalf("awaiting: %v, %v, %d waits", batch, err, waits)
	}
	// A wait whose time is up returns nothing.
	if batch, _, err := src.Next(WithAwait(ctx, -time.Second), storage.On{}, 0); err != nil || len(batch) != 0 || waits != 1 {
		t.Fatalf("time up: %v, %v, %d waits", batch, err, waits)
	}
}
