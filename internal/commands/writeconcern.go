package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// withWriteConcern runs a write command: its write concern is checked
// before the write and, for w > 1, waited for after it.
func (h *Handlers) withWriteConcern(ctx context.Context, req *Request, run handlerFunc) (bson.D, error) {
	wc, err := h.parseWriteConcern(req.Cmd)
	if err != nil {
		return nil, err
	}
	if wc.asyncCommit {
		req.on.Async = true
	}
	reply, err := run(ctx, req)
	if err != nil || wc.standbys == 0 {
		return reply, err
	}
	t0 := time.Now()
	werr := h.awaitWriteConcern(ctx, wc)
	h.instr.writeConcernWait.Observe(time.Since(t0).Seconds())
	if werr != nil {
		reply = append(reply, bson.E{Key: "writeConcernError", Value: werr})
	}
	return reply, nil
}

// writeConcern is a parsed write concern: how many standbys must have
// applied the write besides the primary, for how long to wait, and whether
// the commit may skip waiting for its WAL flush.
type writeConcern struct {
	standbys int
	timeout  time.Duration
	spec     bson.D
	// asyncCommit is j:false (without fsync:true) on a write that waits
	// for no standby: w 0 or 1, or "majority" without replicas. With
	// standbys to wait for, the commit stays
	// synchronous: their wait is for the primary's flushed WAL, which must
	// include the write.
	asyncCommit bool
}

func (h *Handlers) parseWriteConcern(cmd bson.D) (writeConcern, error) {
	spec, err := getDoc(cmd, "writeConcern")
	if err != nil || spec == nil {
		return writeConcern{}, err
	}
	wc := writeConcern{spec: spec}
	journal, err := getBool(spec, "j", true)
	if err != nil {
		return wc, err
	}
	fsync, err := getBool(spec, "fsync", false)
	if err != nil {
		return wc, err
	}
	ms, err := getInt(spec, "wtimeout", 0)
	if err != nil {
		return wc, err
	}
	if ms < 0 {
		return wc, mongoerr.New(mongoerr.FailedToParse, "wtimeout must be non-negative")
	}
	wc.timeout = time.Duration(ms) * time.Millisecond
	if w, ok := lookup(spec, "w"); ok {
		if wc.standbys, err = h.standbysFor(w); err != nil {
			return wc, err
		}
	}
	wc.asyncCommit = !journal && !fsync && wc.standbys == 0
	return wc, nil
}

// standbysFor is how many standbys besides the primary w asks for
// ("majority": a majority of all members, the primary among them).
func (h *Handlers) standbysFor(w any) (int, error) {
	members := len(h.store.Nodes())
	if r := h.opts.Replication; r != nil && r.Members > members {
		members = r.Members
	}
	switch v := w.(type) {
	case string:
		if v != "majority" {
			return 0, mongoerr.Newf(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", v)
		}
		return members / 2, nil
	default:
		n, ok := query.AsInt(v)
		if !ok || n < 0 {
			return 0, mongoerr.Newf(mongoerr.FailedToParse, "w has to be a non-negative number, \"majority\" or a tag set name, not %v", v)
		}
		if n > int64(members) {
			return 0, mongoerr.Newf(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes: w:%d asked, %d members", n, members)
		}
		return int(max(n-1, 0)), nil
	}
}

// awaitWriteConcern waits until enough standbys have applied everything the
// primary had flushed when the write ended (the write's commit included);
// it returns the writeConcernError document when they do not in time.
func (h *Handlers) awaitWriteConcern(ctx context.Context, wc writeConcern) bson.D {
	r := h.opts.Replication
	timeout := wc.timeout
	if timeout == 0 && r != nil {
		timeout = r.WriteConcernTimeout
	}
	if timeout == 0 {
		timeout = time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if r == nil {
		err = errors.New("no replication")
	} else {
		var pos storage.WALPosition
		pos, err = h.store.Position(wctx, h.store.Nodes()[0])
		if err == nil {
			err = r.Monitor.AwaitApplied(wctx, pos.Applied, wc.standbys)
		}
	}
	if err == nil {
		return nil
	}
	h.log.Debug("write concern not satisfied", "standbys", wc.standbys, "timeout", timeout, "err", err)
	return bson.D{
		{Key: "code", Value: int32(mongoerr.WriteConcernFailed)},
		{Key: "codeName", Value: mongoerr.WriteConcernFailed.Name()},
		{Key: "errmsg", Value: fmt.Sprintf("waiting for replication timed out after %s: fewer than %d standbys applied the write", timeout, wc.standbys)},
		{Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}, {Key: "writeConcern", Value: wc.spec}}},
	}
}
