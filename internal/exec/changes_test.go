package exec

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/changes"
	"tierdb/internal/exec/exectest"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// fakeChanges is a ChangeStream over a list of changes; err, when set,
// is what Next answers once they are taken.
type fakeChanges struct {
	chs    []changes.Change
	pos    changes.Position
	err    error
	closed bool
	reads  int
}

func (f *fakeChanges) Next(_ context.Context, n int) ([]changes.Change, error) {
	f.reads++
	if len(f.chs) == 0 {
		return nil, f.err
	}
	out := f.chs[:min(n, len(f.chs))]
	f.chs = f.chs[len(out):]
	f.pos = out[len(out)-1].Pos
	return out, nil
}
func (f *fakeChanges) Position() changes.Position { return f.pos }
func (f *fakeChanges) BeforeTime() bool           { return false }
func (f *fakeChanges) Close()                     { f.closed = true }

func change(t *testing.T, lsn uint64, kind changes.Kind, coll string, doc bson.D) changes.Change {
	t.Helper()
	c := changes.Change{Pos: changes.Position{LSN: lsn}, Time: time.Unix(1, 0), Kind: kind, DB: "d", Coll: coll}
	if doc != nil {
		c.New = mustMarshal(t, doc)
	}
	return c
}

func eventsOf(t *testing.T, raws []bson.Raw) []bson.D {
	t.Helper()
	var out []bson.D
	for _, r := range raws {
		d, err := bsonx.Decode(r)
		mustNoErr(t, err)
		out = append(out, d)
	}
	return out
}

// A change stream's batches: events through the stages after
// $changeStream, split by the batch size with the resume token of the
// last event returned, and ended by the invalidate after a drop.
func TestChangeSourceBatches(t *testing.T) {
	f := &fakeChanges{chs: []changes.Change{
		change(t, 10, changes.Insert, "c", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}}),
		change(t, 20, changes.Insert, "c", bson.D{{Key: "_id", Value: int32(2)}, {Key: "a", Value: int32(2)}}),
		change(t, 30, changes.Insert, "c", bson.D{{Key: "_id", Value: int32(3)}, {Key: "a", Value: int32(3)}}),
		change(t, 40, changes.Drop, "c", nil),
	}}
	s := &ChangeSource{Stream: f, Scope: changes.Scope{DB: "d", Coll: "c"},
		Stages: []bson.D{parse(t, `{"$match":{"fullDocument.a":{"$ne":2}}}`)}}
	batch, done, err := s.Next(context.Background(), storage.On{}, 1)
	mustNoErr(t, err)
	evs := eventsOf(t, batch)
	if len(evs) != 1 || done || field(field(evs[0], "fullDocument").(bson.D), "a") != int32(1) {
		t.Fatalf("first batch %v, done %v", evs, done)
	}
	if tok := s.ResumeToken(); len(tok) == 0 {
		t.Fatal("no resume token")
	}
	var kinds []any
	for !done {
		batch, done, err = s.Next(context.Background(), storage.On{}, 0)
		mustNoErr(t, err)
		for _, ev := range eventsOf(t, batch) {
			kinds = append(kinds, field(ev, "operationType"))
		}
	}
	if len(kinds) != 3 || kinds[0] != "insert" || kinds[1] != "drop" || kinds[2] != "invalidate" {
		t.Fatalf("events %v", kinds)
	}
	s.Close()
	if !f.closed {
		t.Fatal("Close left the stream open")
	}
}

// fullDocument: updateLookup reads the document from the Store; a stage
// that changes _id fails the stream; a lost slot is reported to Lost.
func TestChangeSourceLookupAndErrors(t *testing.T) {
	st := exectest.NewStore()
	mustNoErr(t, st.Load("d", "c", bson.D{{Key: "_id", Value: int32(1)}, {Key: "now", Value: true}}))
	upd := change(t, 10, changes.Update, "c", bson.D{{Key: "_id", Value: int32(1)}, {Key: "then", Value: true}})
	upd.Old = upd.New
	s := &ChangeSource{Store: st, Stream: &fakeChanges{chs: []changes.Change{upd}}, Scope: changes.Scope{DB: "d", Coll: "c"},
		Options: changes.Options{FullDocument: "updateLookup"}}
	batch, _, err := s.Next(context.Background(), storage.On{}, 0)
	mustNoErr(t, err)
	if evs := eventsOf(t, batch); len(evs) != 1 || field(field(evs[0], "fullDocument").(bson.D), "now") != true {
		t.Fatalf("updateLookup: %v", evs)
	}

	s = &ChangeSource{Stream: &fakeChanges{chs: []changes.Change{change(t, 10, changes.Insert, "c", bson.D{{Key: "_id", Value: int32(1)}})}},
		Scope: changes.Scope{DB: "d", Coll: "c"}, Stages: []bson.D{parse(t, `{"$set":{"_id":1}}`)}}
	if _, _, err := s.Next(context.Background(), storage.On{}, 0); !hasCode(err, mongoerr.ChangeStreamFatalError) {
		t.Fatalf("a stage changing _id: %v", err)
	}

	lost := false
	s = &ChangeSource{Stream: &fakeChanges{err: changes.ErrSlotLost}, Lost: func() { lost = true }}
	if _, _, err := s.Next(context.Background(), storage.On{}, 0); !hasCode(err, mongoerr.ChangeStreamHistoryLost) || !lost {
		t.Fatalf("a lost slot: %v, Lost called %v", err, lost)
	}
	s = &ChangeSource{Stream: &fakeChanges{err: errors.New("boom")}}
	if _, _, err := s.Next(context.Background(), storage.On{}, 0); err == nil || err.Error() != "boom" {
		t.Fatalf("a failed read: %v", err)
	}
}

// An awaiting batch (a getMore) waits inside Idle until its await time
// when nothing comes; a first batch does not wait.
func TestChangeSourceAwaits(t *testing.T) {
	f := &fakeChanges{}
	idles := 0
	s := &ChangeSource{Stream: f, Idle: func(_ context.Context, wait func()) error { idles++; wait(); return nil }}
	start := time.Now()
	batch, done, err := s.Next(WithAwait(context.Background(), 50*time.Millisecond), storage.On{}, 0)
	if err != nil || len(batch) != 0 || done || time.Since(start) < 50*time.Millisecond || idles < 2 {
		t.Fatalf("await: %v %v %v after %v, %d idles", batch, done, err, time.Since(start), idles)
	}
	f.reads = 0
	if _, _, err := s.Next(context.Background(), storage.On{}, 0); err != nil || f.reads != 1 {
		t.Fatalf("first batch: %v, %d reads", err, f.reads)
	}
}
