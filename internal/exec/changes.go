package exec

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/changes"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// ChangeStream is a change stream's place in the changes it reads
// (*changes.Stream: a Hub's, fed by PostgreSQL's logical decoding).
type ChangeStream interface {
	// Next takes up to n changes, waiting for some while ctx allows.
	Next(ctx context.Context, n int) ([]changes.Change, error)
	// Position is the resume point after the changes taken.
	Position() changes.Position
	// BeforeTime says the stream is still before its
	// startAtOperationTime.
	BeforeTime() bool
	Close()
}

// maxStreamBatch bounds the changes one batch of a change stream takes,
// so what a stream holds stays bounded whatever its batch size.
const maxStreamBatch = 500

// firstBatchPoll bounds how long a change stream's first batch waits to
// read the slot.
const firstBatchPoll = time.Second

// ChangeSource is a change stream's cursor (a Source): the changes of
// Stream shaped as events (Options, with fullDocument's lookups read from
// Store where the batch runs), an invalidate event after a change that
// ends Scope, all passed through Stages (those that may follow
// $changeStream). It never ends by itself, only after an invalidate; a
// batch with an await time (WithAwait: a getMore) waits for events up to
// it, the first batch only for a moment. Reading the stream and waiting
// are low-tier work the request does not hold its admission for: both
// run inside Idle.
type ChangeSource struct {
	Store   Store
	Stream  ChangeStream
	Scope   changes.Scope
	Options changes.Options
	Stages  []bson.D
	// Idle runs wait with the request's admission given back (see
	// Read.Tail); nil runs it as it is.
	Idle func(ctx context.Context, wait func()) error
	// Lost, when set, hears that the stream's history is gone (its slot
	// was lost).
	Lost func()

	// pending are events made but not yet returned (a reply was full).
	pending []bson.Raw
	// last is the token of the last event returned, while pending is not
	// empty; the stream's position otherwise.
	last  bson.D
	ended bool
}

// AwaitData: a getMore's maxTimeMS is how long it waits for events.
func (s *ChangeSource) AwaitData() bool { return true }

// Close lets go of the stream's place.
func (s *ChangeSource) Close() { s.Stream.Close() }

// ResumeToken is the postBatchResumeToken after the events returned so
// far; nil while the stream is before its startAtOperationTime.
func (s *ChangeSource) ResumeToken() bson.D {
	if len(s.pending) > 0 && s.last != nil {
		return s.last
	}
	if s.Stream.BeforeTime() {
		return nil
	}
	return s.Stream.Position().Token()
}

func (s *ChangeSource) idle(ctx context.Context, wait func()) error {
	if s.Idle == nil {
		wait()
		return nil
	}
	return s.Idle(ctx, wait)
}

func (s *ChangeSource) Next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	until, waits := AwaitUntil(ctx)
	pollBy := until
	if !waits {
		// A first batch returns what is there: it waits for the slot
		// (low-tier admission) for a moment at most.
		pollBy = time.Now().Add(firstBatchPoll)
	}
	for {
		out, err := s.fill(ctx, on, n, pollBy)
		if err != nil || len(out) > 0 || s.ended || !waits {
			return out, s.ended && len(s.pending) == 0, err
		}
		left := time.Until(until)
		if left <= 0 {
			return nil, false, nil
		}
		if err := s.idle(ctx, func() {
			t := time.NewTimer(min(left, changes.PollEvery()))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}); err != nil {
			return nil, false, err
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
	}
}

// fill makes events from the stream's next changes and returns up to n
// (n <= 0: as many as fit a reply).
func (s *ChangeSource) fill(ctx context.Context, on storage.On, n int, pollBy time.Time) ([]bson.Raw, error) {
	if len(s.pending) == 0 && !s.ended {
		var chs []changes.Change
		var err error
		limit := maxStreamBatch
		if n > 0 {
			limit = min(n, limit)
		}
		ierr := s.idle(ctx, func() {
			// Reading waits for low-tier admission, which high-tier
			// work may hold back past the await time: then the batch is
			// empty, not an error.
			pctx, cancel := context.WithDeadline(ctx, pollBy)
			defer cancel()
			chs, err = s.Stream.Next(pctx, limit)
			if err != nil && pctx.Err() != nil && ctx.Err() == nil {
				chs, err = nil, nil
			}
		})
		if errors.Is(err, changes.ErrSlotLost) {
			if s.Lost != nil {
				s.Lost()
			}
			return nil, mongoerr.New(mongoerr.ChangeStreamHistoryLost, "the change stream's history is lost: its replication slot is gone (after a failover, or dropped); open a new stream")
		}
		if err != nil {
			return nil, err
		}
		if ierr != nil {
			return nil, ierr
		}
		if err := s.events(ctx, on, chs); err != nil {
			return nil, err
		}
	}
	var out []bson.Raw
	size := 0
	for len(s.pending) > 0 && (n <= 0 || len(out) < n) {
		raw := s.pending[0]
		if len(out) > 0 && size+ElemSize(len(out), raw) > MaxBatchBytes {
			break
		}
		size += ElemSize(len(out), raw)
		out = append(out, raw)
		s.pending = s.pending[1:]
		if id, err := raw.LookupErr("_id"); err == nil {
			if d, ok := id.DocumentOK(); ok {
				if tok, err := bsonx.Decode(d); err == nil {
					s.last = tok
				}
			}
		}
	}
	return out, nil
}

// lookup is fullDocument's read of db.coll's document id, nil when gone.
func (s *ChangeSource) lookup(ctx context.Context, on storage.On) func(db, coll string, id any) (bson.D, error) {
	return func(db, coll string, id any) (bson.D, error) {
		col, err := s.Store.Collection(ctx, on, db, coll)
		if storage.IsCode(err, storage.ErrNamespaceNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		row, err := s.Store.Get(ctx, on, col, storage.IDKey(id))
		if err != nil || row == nil {
			return nil, err
		}
		return bsonx.Decode(row.Doc)
	}
}

// events shapes changes as events, through the stages after $changeStream.
func (s *ChangeSource) events(ctx context.Context, on storage.On, chs []changes.Change) error {
	opts := s.Options
	opts.Lookup = s.lookup(ctx, on)
	sink := &Collect{}
	head, err := Build(s.Stages, sink, &Env{Ctx: ctx, Now: bson.NewDateTimeFromTime(time.Now())})
	if err != nil {
		return err
	}
	for i := range chs {
		c := &chs[i]
		ev, err := c.Event(opts)
		if err != nil {
			return err
		}
		evs := []bson.D{ev}
		if s.Scope.Invalidates(c) {
			evs = append(evs, changes.InvalidateEvent(c))
		}
		for _, ev := range evs {
			before := len(sink.Raws)
			if err := head.Push(ev); err != nil {
				return err
			}
			for _, raw := range sink.Raws[before:] {
				if !sameID(raw, ev[0].Value) {
					return mongoerr.New(mongoerr.ChangeStreamFatalError, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point.")
				}
			}
		}
		if s.Scope.Invalidates(c) {
			s.ended = true
		}
	}
	s.pending = append(s.pending, sink.Raws...)
	return nil
}

func sameID(raw bson.Raw, want any) bool {
	got, err := raw.LookupErr("_id")
	if err != nil {
		return false
	}
	w, err := bsonx.Marshal(bson.D{{Key: "_id", Value: want}})
	if err != nil {
		return false
	}
	return string(bson.Raw(w).Lookup("_id").Value) == string(got.Value)
}
