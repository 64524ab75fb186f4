package commands

import (
	"sort"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
)

// $currentOp's idle cursors: what a cursor remembers of the command that
// opened it and of its batches, and the documents describing the cursors
// no getMore is using.

// cursorOrigin is what a cursor remembers of its opening, for $currentOp.
type cursorOrigin struct {
	created time.Time
	// cmd is the opening command as $currentOp shows commands
	// (shownCommand: lsid and $db included, truncated past 1 KB).
	cmd       bson.D
	lsid      any // the command's lsid, nil without one
	tailable  bool
	awaitData bool
	// docs and batches count what the cursor returned, its first batch
	// included.
	docs, batches atomic.Int64
}

// newCursorOrigin describes a cursor req opens over src, whose first batch
// returned n documents.
func newCursorOrigin(req *Request, src exec.Source, n int) *cursorOrigin {
	shown, _ := shownCommand(req.Name, req.Cmd, maxOpCommandBytes)
	o := &cursorOrigin{created: time.Now(), cmd: shown}
	o.lsid, _ = lookup(req.Cmd, "lsid")
	switch s := src.(type) {
	case *exec.TailSource:
		o.tailable, o.awaitData = true, s.AwaitData()
	case *exec.ChangeSource:
		o.tailable, o.awaitData = true, true
	}
	o.returned(n)
	return o
}

// returned counts a batch of n documents.
func (o *cursorOrigin) returned(n int) {
	o.docs.Add(int64(n))
	o.batches.Add(1)
}

// openCursor registers a cursor over src that req opened, whose first
// batch returned n documents.
func (h *Handlers) openCursor(req *Request, ns string, src exec.Source, n int) *cursor {
	return h.cursors.add(ns, cursorOwner(req.Session), src, newCursorOrigin(req, src, n))
}

// idleCursorDocs describes the open cursors no getMore is using, as
// MongoDB's $currentOp idleCursors: the caller's own, or everyone's with
// allUsers. A cursor never honours noCursorTimeout (it still times out),
// so that field is false.
func (h *Handlers) idleCursorDocs(req *Request, allUsers bool) []bson.D {
	cursors := h.cursors.list()
	sort.Slice(cursors, func(i, j int) bool { return cursors[i].origin.created.Before(cursors[j].origin.created) })
	me := cursorOwner(req.Session)
	var docs []bson.D
	for _, c := range cursors {
		if !allUsers && c.owner != me {
			continue
		}
		if !c.mu.TryLock() {
			continue // a getMore is using it: it shows as that operation
		}
		c.mu.Unlock()
		o := c.origin
		d := bson.D{{Key: "type", Value: "idleCursor"}, {Key: "host", Value: hostname()}, {Key: "ns", Value: c.ns}}
		if o.lsid != nil {
			d = append(d, bson.E{Key: "lsid", Value: o.lsid})
		}
		docs = append(docs, append(d, bson.E{Key: "cursor", Value: bson.D{
			{Key: "cursorId", Value: c.id},
			{Key: "createdDate", Value: bson.NewDateTimeFromTime(o.created)},
			{Key: "lastAccessDate", Value: bson.NewDateTimeFromTime(time.Unix(0, c.lastUsed.Load()))},
			{Key: "nDocsReturned", Value: o.docs.Load()},
			{Key: "nBatchesReturned", Value: o.batches.Load()},
			{Key: "noCursorTimeout", Value: false},
			{Key: "tailable", Value: o.tailable},
			{Key: "awaitData", Value: o.awaitData},
			{Key: "originatingCommand", Value: o.cmd},
		}}))
	}
	return docs
}
