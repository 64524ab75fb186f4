package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

const (
	// defaultAwait is how long an awaitData getMore without maxTimeMS
	// waits for new data, as in MongoDB.
	defaultAwait = time.Second
	// tailPoll is how often a waiting tailable cursor looks for rows this
	// tierdb was not told about (other tierdbs, transactions committing).
	tailPoll = 100 * time.Millisecond
)

// cappedOptions reads create's capped, size and max.
func cappedOptions(cmd bson.D) (*storage.Capped, error) {
	capped, err := getBool(cmd, "capped", false)
	if err != nil {
		return nil, err
	}
	size, err := getNumber(cmd, "size", 0)
	if err != nil {
		return nil, err
	}
	maxDocs, err := getNumber(cmd, "max", 0)
	if err != nil {
		return nil, err
	}
	if !capped {
		_, hasSize := lookup(cmd, "size")
		_, hasMax := lookup(cmd, "max")
		if hasSize || hasMax {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "the 'size' and 'max' fields are only valid for a capped collection ('capped: true')")
		}
		return nil, nil
	}
	if size < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "size has to be >= 0")
	}
	if size == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "the 'size' field is required when 'capped' is true")
	}
	if size > 1<<50 {
		return nil, mongoerr.New(mongoerr.BadValue, "size cannot exceed 1 PB")
	}
	if maxDocs >= 1<<31 {
		return nil, mongoerr.New(mongoerr.BadValue, "max document count must be less than 2^31")
	}
	c := &storage.Capped{Size: storage.CappedSize(int64(size))}
	if maxDocs > 0 {
		c.Max = int64(maxDocs)
	}
	return c, nil
}

// tailOptions are find's tailable and awaitData.
type tailOptions struct {
	tailable, awaitData bool
}

func parseTailOptions(cmd bson.D, sortDoc bson.D, skip, limit int64) (tailOptions, error) {
	var o tailOptions
	var err error
	if o.tailable, err = getBool(cmd, "tailable", false); err != nil {
		return o, err
	}
	if o.awaitData, err = getBool(cmd, "awaitData", false); err != nil {
		return o, err
	}
	if o.awaitData && !o.tailable {
		return o, mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if !o.tailable {
		return o, nil
	}
	for _, e := range sortDoc {
		if e.Key != "$natural" || e.Value != int32(1) && e.Value != int64(1) && e.Value != 1.0 {
			return o, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
		}
	}
	if skip != 0 || limit != 0 {
		return o, mongoerr.New(mongoerr.NotImplemented, "tierdb does not implement skip or limit on a tailable cursor")
	}
	return o, nil
}

// findTailable opens a tailable cursor on a capped collection.
func (h *Handlers) findTailable(ctx context.Context, on storage.On, req *Request, ns string, col *storage.Collection, rs *readSpec, o tailOptions, batchSize int, singleBatch bool) (bson.D, error) {
	if col.Capped == nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "error processing query: ns=%s: tailable cursor requested on non capped collection", ns)
	}
	src := &tailSource{store: h.store, col: col, spec: rs, await: o.awaitData, node: on.Node}
	// batchSize 0 asks for a cursor and no documents: nothing is read.
	read := batchSize != 0 || singleBatch
	var batch []bson.Raw
	if read {
		var err error
		if batch, _, err = src.next(ctx, on, batchSize); err != nil {
			return nil, err
		}
	}
	var id int64
	// Without a position (the collection was empty) the cursor is dead at
	// once, as MongoDB's tailable cursors are.
	if (src.after > 0 || !read) && !singleBatch {
		id = h.cursors.add(ns, cursorOwner(req.Session), src).id
	}
	return cursorReply(id, ns, rawArray(batch), true), nil
}

// tailSource reads a capped collection in insertion order from a position
// and never ends: at the end it waits (awaitData) or returns what it has.
type tailSource struct {
	store *storage.Store
	col   *storage.Collection
	spec  *readSpec
	await bool
	after int64 // seq of the last row examined, matching or not
	// node is where the first batch was read; the cursor stays there.
	node *storage.Node
}

type awaitKey struct{}

// withAwait tells an awaitData source how long a getMore may wait.
func withAwait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, awaitKey{}, time.Now().Add(d))
}

func (t *tailSource) awaitData() bool { return t.await }

func (t *tailSource) next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	until, waits := ctx.Value(awaitKey{}).(time.Time)
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
		err = idle(ctx, func() {
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
func (t *tailSource) read(ctx context.Context, on storage.On, n int) ([]bson.Raw, error) {
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
				if len(out) > 0 && size+elemSize(len(out), raw) > maxBatchBytes {
					return out, nil
				}
				size += elemSize(len(out), raw)
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
func (t *tailSource) match(doc []byte) (bson.Raw, bool, error) {
	if t.spec.empty && t.spec.proj == nil {
		return doc, true, nil
	}
	d, err := bsonx.Decode(doc)
	if err != nil {
		return nil, false, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
	}
	if !t.spec.empty {
		ok, err := t.spec.filter.MatchErr(d)
		if err != nil || !ok {
			return nil, false, err
		}
	}
	if t.spec.proj == nil {
		return doc, true, nil
	}
	b, err := projectRaw(t.spec.proj, d)
	return b, err == nil, err
}

// getMoreContext applies getMore's maxTimeMS: the await time of an
// awaitData cursor. Other cursors refuse it, as MongoDB does.
func getMoreContext(ctx context.Context, cmd bson.D, src batchSource) (context.Context, context.CancelFunc, error) {
	ms, err := parseMaxTimeMS(cmd) // MongoDB's checks (argcheck.go)
	if err != nil {
		return ctx, func() {}, err
	}
	if a, ok := src.(interface{ awaitData() bool }); ok && a.awaitData() {
		d := defaultAwait
		if ms > 0 {
			d = ms
		}
		return withAwait(ctx, d), func() {}, nil
	}
	if ms != 0 {
		return ctx, func() {}, mongoerr.New(mongoerr.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
	}
	return ctx, func() {}, nil
}

// collectionOptions are a collection's create options, as listCollections
// shows them.
func collectionOptions(c *storage.Collection) bson.D {
	if c.Capped == nil {
		return bson.D{}
	}
	opts := bson.D{{Key: "capped", Value: true}, {Key: "size", Value: c.Capped.Size}}
	if c.Capped.Max > 0 {
		opts = append(opts, bson.E{Key: "max", Value: c.Capped.Max})
	}
	return opts
}
