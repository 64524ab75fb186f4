package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

const (
	// defaultAwait is how long an awaitData getMore without maxTimeMS
	// waits for new data, as in MongoDB.
	defaultAwait = time.Second
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
func (h *Handlers) findTailable(ctx context.Context, on storage.On, req *Request, ns string, col *storage.Collection, rs *exec.ReadSpec, o tailOptions, batchSize int, singleBatch bool) (bson.D, error) {
	if col.Capped == nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "error processing query: ns=%s: tailable cursor requested on non capped collection", ns)
	}
	src := h.read(ctx, on, col, rs).Tail(o.awaitData, idle)
	// batchSize 0 asks for a cursor and no documents: nothing is read.
	read := batchSize != 0 || singleBatch
	var batch []bson.Raw
	if read {
		var err error
		if batch, _, err = src.Next(ctx, on, batchSize); err != nil {
			return nil, err
		}
	}
	var id int64
	// Without a position (the collection was empty) the cursor is dead at
	// once, as MongoDB's tailable cursors are.
	if (src.Positioned() || !read) && !singleBatch {
		id = h.openCursor(req, ns, src, len(batch)).id
	}
	return cursorReply(id, ns, rawArray(batch), true), nil
}

// getMoreContext applies getMore's maxTimeMS: the await time of an
// awaitData cursor. Other cursors refuse it, as MongoDB does.
func getMoreContext(ctx context.Context, cmd bson.D, src exec.Source) (context.Context, context.CancelFunc, error) {
	ms, err := parseMaxTimeMS(cmd) // MongoDB's checks (argcheck.go)
	if err != nil {
		return ctx, func() {}, err
	}
	if a, ok := src.(interface{ AwaitData() bool }); ok && a.AwaitData() {
		d := defaultAwait
		if ms > 0 {
			d = ms
		}
		return exec.WithAwait(ctx, d), func() {}, nil
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
