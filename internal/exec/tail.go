package exec

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// tailPoll is how often a waiting tailable cursor looks for rows its
// Store was not told about (other tierdbs, transactions committing).
const tailPoll = 100 * time.Millisecond

type awaitKey struct{}

// WithAwait tells an awaitData source (AwaitData) how long its Next may
// wait for new documents: until d from now.
func WithAwait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, awaitKey{}, time.Now().Add(d))
}

// AwaitUntil is when a Next under ctx stops waiting for new documents
// (WithAwait); ok is false when it must not wait at all.
func AwaitUntil(ctx context.Context) (until time.Time, ok bool) {
	until, ok = ctx.Value(awaitKey{}).(time.Time)
	return until, ok
}

// TailSource is a tailable cursor of a capped collection: it reads in
// insertion order from a position and never ends. At the end it returns
// what it has, or, when it awaits data and its Next may wait
// (WithAwait), waits for an insert (the Store's Appended) or the next
// poll, through Idle.
type TailSource struct {
	store Store
	// node is where the first batch was read; the cursor stays there.
	node  *storage.Node
	col   *storage.Collection
	spec  *ReadSpec
	await bool
	after int64 // seq of the last row examined, matching or not
	// idle runs a wait (the caller gives up its admission meanwhile).
	idle func(ctx context.Context, wait func()) error
}

// Tail opens a tailable cursor on the read's capped collection; await
// makes it an awaitData one. idle runs its waits (nil: just waits). Only
// the spec's filter and projection apply.
func (r *Read) Tail(await bool, idle func(ctx context.Context, wait func()) error) *TailSource {
	if idle == nil {
		idle = func(_ context.Context, wait func()) error { wait(); return nil }
	}
	return &TailSource{store: r.Store, node: r.On.Node, col: r.Col, spec: r.Spec, await: await, idle: idle}
}

// AwaitData reports whether the cursor waits for new documents.
func (t *TailSource) AwaitData() bool { return t.await }

// Positioned reports whether the cursor has a position: it saw a row. A
// tailable cursor without one (the collection was empty) is dead at once,
// as MongoDB's are.
func (t *TailSource) Positioned() bool { return t.after > 0 }

// Next returns the matching documents after the position, up to n (n <=
// 0: as many as fit a reply); never done.
func (t *TailSource) Next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	until, waits := AwaitUntil(ctx)
	for {
		wake := t.store.Appended(t.col) // before reading, so no insert is missed
		out, err := t.read(ctx, on, n)
		if err != nil || len(out) > 0 || !t.await || !waits {
			return out, false, err
		}
		left := time.Until(until)
		if left <= 0 {
			return out, false, nil
		}
		err = t.idle(ctx, func() {
			timer := time.NewTimer(min(left, tailPoll))
			defer timer.Stop()
			select {
			case <-wake:
			case <-timer.C:
			case <-ctx.Done():
			}
		})
		if err != nil {
			return nil, false, err
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
	}
}

// read returns the matching rows after the position, up to n (n <= 0: as
// many as fit a reply).
func (t *TailSource) read(ctx context.Context, on storage.On, n int) ([]bson.Raw, error) {
	if t.node != nil {
		on.Node = t.node
	}
	var out []bson.Raw
	size := 0
	for n <= 0 || len(out) < n {
		chunk := 1000
		if n > 0 {
			chunk = max(n-len(out), 16)
		}
		rows, lost, err := t.store.Tail(ctx, on, t.col, storage.TailParams{After: t.after, Limit: chunk})
		if err != nil {
			return nil, err
		}
		if lost {
			return nil, mongoerr.Newf(mongoerr.CappedPositionLost, "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", t.after)
		}
		for _, row := range rows {
			raw, ok, err := t.match(row.Doc)
			if err != nil {
				return nil, err
			}
			if ok {
				if len(out) > 0 && size+ElemSize(len(out), raw) > MaxBatchBytes {
					return out, nil
				}
				size += ElemSize(len(out), raw)
				out = append(out, raw)
			}
			t.after = row.Seq
			if n > 0 && len(out) >= n {
				return out, nil
			}
		}
		if len(rows) < chunk {
			return out, nil
		}
	}
	return out, nil
}

// match applies the cursor's filter and projection to one stored document.
func (t *TailSource) match(doc []byte) (bson.Raw, bool, error) {
	if t.spec.Empty && t.spec.Proj == nil {
		return doc, true, nil
	}
	d, err := bsonx.Decode(doc)
	if err != nil {
		return nil, false, errCorrupt()
	}
	if !t.spec.Empty {
		ok, err := t.spec.Filter.MatchErr(d)
		if err != nil || !ok {
			return nil, false, err
		}
	}
	if t.spec.Proj == nil {
		return doc, true, nil
	}
	b, err := ProjectRaw(t.spec.Proj, d)
	return b, err == nil, err
}
