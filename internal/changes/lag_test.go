package changes

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// txns appends count transactions of per inserts each, from LSN lsn on
// (10 apart), with ids counting from id; it returns the next LSN and id.
func (f *fakeSlot) txns(t *testing.T, lsn uint64, id int32, count, per int) (uint64, int32) {
	for range count {
		ids := make([]int32, per)
		for i := range ids {
			ids[i] = id
			id++
		}
		f.txn(t, lsn, ids...)
		lsn += 10
	}
	return lsn, id
}

// drain reads s until it has want changes, checking they come in order.
func drain(t *testing.T, hub *Hub, s *Stream, first int32, want int) {
	t.Helper()
	next := first
	for tries := 0; int(next-first) < want; tries++ {
		if tries > 10*want/maxCatchUp+100 {
			t.Fatalf("stream stuck after %d of %d changes", next-first, want)
		}
		hub.lastPoll = time.Time{}
		for _, id := range ids(t, mustNext(t, s)) {
			if id != next {
				t.Fatalf("got id %d, want %d", id, next)
			}
			next++
		}
	}
}

// A stream that does not read never holds the others up: once the buffer
// is full it is left behind, the others go on, and it later reads its
// changes from the slot, in order, then joins the buffer again.
func TestHubLeavesASlowStreamBehind(t *testing.T) {
	ctx := context.Background()
	slot, hub, fast := hubWithStream(t)
	hub.maxChanges = 500
	slow, err := hub.Open(ctx, Scope{DB: "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := hub.maxChanges*4 + 50
	slot.txns(t, 10, 0, total/10, 10)
	drain(t, hub, fast, 0, total)
	if len(hub.buf) > hub.maxChanges {
		t.Errorf("buffer holds %d changes", len(hub.buf))
	}
	if !slow.isLagging() {
		t.Fatal("the slow stream was not left behind")
	}
	if slot.confirmed > slow.pos.needs() {
		t.Fatalf("the slot (%d) moved past the slow stream (%d)", slot.confirmed, slow.pos.needs())
	}
	drain(t, hub, slow, 0, total)
	if slow.isLagging() {
		t.Error("the slow stream did not join the buffer again")
	}
	// Both read what comes next from the buffer.
	slot.txn(t, 1_000_000, 99999)
	for _, s := range []*Stream{fast, slow} {
		hub.lastPoll = time.Time{}
		if g := ids(t, mustNext(t, s)); len(g) != 1 || g[0] != 99999 {
			t.Errorf("after catching up got %v", g)
		}
	}
}

// A stream left behind by more than MaxLagMessages loses its history; the
// slot then moves on.
func TestHubLosesAStreamTooFarBehind(t *testing.T) {
	ctx := context.Background()
	slot, hub, fast := hubWithStream(t)
	hub.maxChanges, hub.maxLag = 500, 5000
	slow, err := hub.Open(ctx, Scope{DB: "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const per = 10
	total := (hub.maxLag/per + hub.maxChanges/per + 20) * per
	slot.txns(t, 10, 0, total/per, per)
	drain(t, hub, fast, 0, total)
	hub.lastPoll = time.Time{}
	mustNext(t, fast)
	if _, err := slow.Next(ctx, 0); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Fatalf("the stream left far behind: %v, want ChangeStreamHistoryLost", err)
	}
	if slot.confirmed <= 10 {
		t.Errorf("the slot stayed at %d", slot.confirmed)
	}
}

// A resume from history the buffer let go reads it from the slot without
// emptying the buffer the other streams read.
func TestHubResumeKeepsTheBuffer(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	b, _ := hub.Open(ctx, Scope{DB: "d"}, nil)
	slot.txn(t, 10, 1, 2, 3)
	slot.txn(t, 20, 4, 44)
	mustNext(t, a)
	mustNext(t, b)
	hub.lastPoll = time.Time{}
	slot.txn(t, 30, 5)
	mustNext(t, a) // the buffer now holds 5 only; b has not read it
	r, err := hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 20, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !r.isLagging() {
		t.Fatal("a stream resumed before the buffer reads on its own")
	}
	if g := ids(t, mustNext(t, r)); len(g) != 2 || g[0] != 44 || g[1] != 5 {
		t.Errorf("resumed stream got %v, want [44 5]", g)
	}
	if g := ids(t, mustNext(t, b)); len(g) != 1 || g[0] != 5 {
		t.Errorf("the other stream got %v, want [5]", g)
	}
}

// startAtOperationTime: the changes at or after a cluster time, from the
// slot's history; before what the slot keeps is history lost.
func TestHubOpenAt(t *testing.T) {
	ctx := context.Background()
	slot := &fakeSlot{confirmed: 1, current: 1}
	hub, err := NewHub(ctx, slot, admitAll)
	if err != nil {
		t.Fatal(err)
	}
	keep, _ := hub.Open(ctx, Scope{DB: "d"}, nil) // holds the slot
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	slot.when = t0
	slot.txn(t, 10, 1, 2)
	slot.when = t0.Add(2 * time.Second)
	slot.txn(t, 20, 3)
	slot.when = t0.Add(5 * time.Second)
	slot.txn(t, 30, 4)
	mustNext(t, keep)
	hub.since = time.Now().Add(-time.Hour) // as if the slot had stayed there an hour
	at := bson.Timestamp{T: uint32(t0.Add(2 * time.Second).Unix())}
	s, err := hub.OpenAt(ctx, Scope{DB: "d"}, at)
	if err != nil {
		t.Fatal(err)
	}
	if g := ids(t, mustNext(t, s)); len(g) != 2 || g[0] != 3 || g[1] != 4 {
		t.Errorf("from t0+2s got %v, want [3 4]", g)
	}
	// The increment counts within a second: the second change of the
	// transaction at t0 has increment 2.
	s2, _ := hub.OpenAt(ctx, Scope{DB: "d"}, bson.Timestamp{T: uint32(t0.Unix()), I: 2})
	if g := ids(t, mustNext(t, s2)); len(g) != 3 || g[0] != 2 {
		t.Errorf("from {t0, 2} got %v, want [2 3 4]", g)
	}
	old := bson.Timestamp{T: uint32(time.Now().Add(-2 * time.Hour).Unix())}
	if _, err := hub.OpenAt(ctx, Scope{DB: "d"}, old); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Errorf("before the slot's history: %v, want ChangeStreamHistoryLost", err)
	}
	// A time to come: only what is committed from then on.
	slot.current = 40
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	f, err := hub.OpenAt(ctx, Scope{DB: "d"}, bson.Timestamp{T: uint32(later.Unix())})
	if err != nil {
		t.Fatal(err)
	}
	slot.when = time.Now()
	slot.txn(t, 50, 5)
	slot.when = later
	slot.txn(t, 60, 6)
	hub.lastPoll = time.Time{}
	if g := ids(t, mustNext(t, f)); len(g) != 1 || g[0] != 6 {
		t.Errorf("from an hour ahead got %v, want [6]", g)
	}
}

// A stream left behind that never reads loses its history once the others
// are maxLag past it, even when they are lagging themselves: the slot
// moves on and the reading stream gets all its changes.
func TestHubLosesAnAbandonedStreamBehindLaggingOnes(t *testing.T) {
	ctx := context.Background()
	slot, hub, fast := hubWithStream(t)
	hub.maxChanges, hub.maxLag = 100, 2000
	abandoned, _ := hub.Open(ctx, Scope{DB: "d"}, nil)
	reader, _ := hub.Open(ctx, Scope{DB: "d"}, nil)
	lsn, id := slot.txns(t, 10, 0, 100, 10) // 1000 changes, 1300 messages
	drain(t, hub, fast, 0, int(id))
	fast.Close()
	if !abandoned.isLagging() || !reader.isLagging() {
		t.Fatal("the streams that did not read were not left behind")
	}
	drain(t, hub, reader, 0, int(id))
	_, end := slot.txns(t, lsn, id, 200, 10)
	drain(t, hub, reader, id, int(end-id))
	if _, err := abandoned.Next(ctx, 0); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Fatalf("the abandoned stream: %v, want ChangeStreamHistoryLost", err)
	}
	if slot.confirmed <= 10 {
		t.Errorf("the slot stayed at %d", slot.confirmed)
	}
}

// A transaction larger than the buffer is read a buffer at a time, in
// order, by a stream reading the buffer and by one left behind.
func TestHubReadsATransactionLargerThanTheBuffer(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	hub.maxChanges = 100
	b, _ := hub.Open(ctx, Scope{DB: "d"}, nil)
	slot.txns(t, 10, 0, 1, 1500)
	slot.txns(t, 20, 1500, 1, 1)
	drain(t, hub, a, 0, 1501)
	if len(hub.buf) > hub.maxChanges {
		t.Errorf("buffer holds %d changes", len(hub.buf))
	}
	drain(t, hub, b, 0, 1501)
}

// A slot moved by another tierdb takes the history before it away from
// startAtOperationTime too.
func TestHubOpenAtAfterTheSlotMovedElsewhere(t *testing.T) {
	ctx := context.Background()
	slot, hub, s := hubWithStream(t)
	hub.since = time.Now().Add(-time.Hour)
	slot.txn(t, 10, 1)
	slot.confirmed = 20 // another tierdb advanced the shared slot
	if _, err := s.Next(ctx, 0); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Fatalf("Next: %v", err)
	}
	at := bson.Timestamp{T: uint32(time.Now().Add(-time.Minute).Unix())}
	if _, err := hub.OpenAt(ctx, Scope{DB: "d"}, at); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Errorf("a minute ago, after the slot moved now: %v, want ChangeStreamHistoryLost", err)
	}
}

// With nothing written since the slot was read to its end, a stream
// waiting for changes does not read the slot again (which would decode the
// history it keeps for nothing).
func TestHubReadsTheSlotOnlyWhenTheWALMoved(t *testing.T) {
	slot, hub, a := hubWithStream(t)
	slot.txn(t, 10, 1)
	if g := ids(t, mustNext(t, a)); len(g) != 1 {
		t.Fatalf("got %v", g)
	}
	peeks := slot.peeks
	for range 3 {
		hub.lastPoll = time.Time{}
		mustNext(t, a)
	}
	if slot.peeks != peeks {
		t.Errorf("%d reads of an unchanged slot", slot.peeks-peeks)
	}
	slot.txn(t, 20, 2)
	hub.lastPoll = time.Time{}
	if g := ids(t, mustNext(t, a)); len(g) != 1 || g[0] != 2 {
		t.Errorf("after a new transaction got %v", g)
	}
}
