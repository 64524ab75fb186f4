package commands

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/bsonx"
	"tierdb/internal/changes"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// Change streams: an aggregate whose first stage is $changeStream reads
// the hub of package changes instead of a collection. The cursor never
// ends by itself (only an invalidate event ends it); each getMore waits
// for new events up to its maxTimeMS (1 s by default) without holding its
// admission, and the hub reads PostgreSQL at the low tier.

// maxStreamBatch bounds the changes one getMore of a change stream takes.
const maxStreamBatch = 500

// firstBatchPoll bounds how long a change stream's first batch waits to
// read the slot.
const firstBatchPoll = time.Second

// changeStreamStages may follow $changeStream, as in MongoDB.
var changeStreamStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true,
}

// isChangeStream reports whether an aggregate's pipeline starts with
// $changeStream.
func isChangeStream(cmd bson.D) bool {
	v, ok := lookup(cmd, "pipeline")
	if !ok {
		return false
	}
	a, ok := v.(bson.A)
	if !ok || len(a) == 0 {
		return false
	}
	st, ok := a[0].(bson.D)
	return ok && len(st) > 0 && st[0].Key == "$changeStream"
}

// streamSpec is a parsed change stream request.
type streamSpec struct {
	scope changes.Scope
	opts  changes.Options
	start *changes.Position
	// at: startAtOperationTime, the changes at or after that cluster time.
	at     *bson.Timestamp
	stages []bson.D
	// startAfter may resume after an invalidate; resumeAfter may not.
	startAfter bool
}

func parseChangeStream(req *Request) (*streamSpec, error) {
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	stages, err := exec.ParsePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	opts, ok := stages[0][0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "the $changeStream stage takes an object")
	}
	sp := &streamSpec{stages: stages[1:], opts: changes.Options{FullDocument: "default", BeforeChange: "off"}}
	for _, st := range sp.stages {
		if !changeStreamStages[st[0].Key] {
			return nil, mongoerr.Newf(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", st[0].Key)
		}
	}
	var resumeAfter, startAfter any
	cluster := false
	for _, e := range opts {
		switch e.Key {
		case "fullDocument":
			s, ok := e.Value.(string)
			if !ok || s != "default" && s != "updateLookup" && s != "whenAvailable" && s != "required" {
				return nil, mongoerr.Newf(mongoerr.BadValue, "'%v' is not a valid value for $changeStream.fullDocument", e.Value)
			}
			sp.opts.FullDocument = s
		case "fullDocumentBeforeChange":
			s, ok := e.Value.(string)
			if !ok || s != "off" && s != "whenAvailable" && s != "required" {
				return nil, mongoerr.Newf(mongoerr.BadValue, "'%v' is not a valid value for $changeStream.fullDocumentBeforeChange", e.Value)
			}
			sp.opts.BeforeChange = s
		case "resumeAfter":
			resumeAfter = e.Value
		case "startAfter":
			startAfter = e.Value
		case "allChangesForCluster":
			b, ok := e.Value.(bool)
			if !ok {
				return nil, typeErr("$changeStream.allChangesForCluster", "bool", e.Value)
			}
			cluster = b
		case "showExpandedEvents", "allowToRunOnConfigDB", "allowToRunOnSystemNS":
			if e.Value != false {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "tierdb does not implement $changeStream.%s", e.Key)
			}
		case "startAtOperationTime":
			ts, ok := e.Value.(bson.Timestamp)
			if !ok {
				return nil, typeErr("$changeStream.startAtOperationTime", "timestamp", e.Value)
			}
			sp.at = &ts
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$changeStream.%s' is an unknown field.", e.Key)
		}
	}
	if resumeAfter != nil && startAfter != nil || sp.at != nil && (resumeAfter != nil || startAfter != nil) {
		return nil, mongoerr.New(mongoerr.BadValue, "Only one type of resume option is allowed, but multiple were found.")
	}
	for i, tok := range []any{resumeAfter, startAfter} {
		if tok != nil {
			p, invalidate, err := changes.ParseToken(tok)
			if err != nil {
				return nil, err
			}
			if invalidate && i == 0 {
				return nil, mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification; use 'startAfter'")
			}
			sp.start = &p
		}
	}
	sp.startAfter = startAfter != nil
	switch v := req.Cmd[0].Value.(type) {
	case string:
		if cluster {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
		}
		coll, err := collectionName(req)
		if err != nil {
			return nil, err
		}
		sp.scope = changes.Scope{DB: req.DB, Coll: coll}
	default:
		if n, ok := asNumber(v); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "aggregate's first value must be a collection name or 1")
		}
		switch {
		case cluster && req.DB != "admin":
			return nil, mongoerr.New(mongoerr.InvalidOptions, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database")
		case cluster:
			sp.scope = changes.Scope{Cluster: true}
		default:
			sp.scope = changes.Scope{DB: req.DB}
		}
	}
	if !sp.scope.Cluster && (sp.scope.DB == "admin" || sp.scope.DB == "config" || sp.scope.DB == "local") {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", sp.scope.DB)
	}
	return sp, nil
}

// mayWatch checks MongoDB's privileges for a change stream: find and
// changeStream on the collection, the database, or (for the deployment)
// on every database.
func (h *Handlers) mayWatch(s *Session, sc changes.Scope) bool {
	if h.opts.Auth == nil || !h.opts.Auth.Required() {
		return true
	}
	if s == nil || s.User == nil {
		return false
	}
	need := auth.Actions(auth.ActFind, auth.ActChangeStream)
	if sc.Cluster {
		return s.User.Grants.Allows("", "", need)
	}
	return s.User.Grants.Allows(sc.DB, sc.Coll, need)
}

func (h *Handlers) changeStream(ctx context.Context, req *Request) (bson.D, error) {
	if req.on.InTransaction() {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTxn, "Operation not permitted in transaction :: caused by :: $changeStream is not allowed in a transaction")
	}
	if explain, _ := getBool(req.Cmd, "explain", false); explain {
		return nil, mongoerr.New(mongoerr.NotImplemented, "tierdb does not explain change streams")
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, err
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	sp, err := parseChangeStream(req)
	if err != nil {
		return nil, err
	}
	if !h.mayWatch(req.Session, sp.scope) {
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to execute command { aggregate: ... $changeStream }", req.DB)
	}
	if sp.scope.Coll != "" {
		// A view has no changes of its own: MongoDB refuses to watch one.
		if v, err := h.viewOf(ctx, req.on, req.DB, sp.scope.Coll); err != nil {
			return nil, err
		} else if v != nil {
			return nil, mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "$changeStream is not supported on views: %s.%s", req.DB, sp.scope.Coll)
		}
	}
	hub, err := h.changeHub(ctx)
	if err != nil {
		return nil, err
	}
	var stream *changes.Stream
	if sp.at != nil {
		stream, err = hub.OpenAt(ctx, sp.scope, *sp.at)
	} else {
		stream, err = hub.Open(ctx, sp.scope, sp.start)
	}
	if err != nil {
		return nil, err
	}
	src := &streamSource{h: h, stream: stream, spec: sp, db: req.DB}
	ns := req.DB + ".$cmd.aggregate"
	if sp.scope.Coll != "" {
		ns = req.DB + "." + sp.scope.Coll
	}
	// The first batch returns what is there without waiting, as MongoDB's;
	// batchSize 0 asks for the cursor (and its resume token) only.
	var batch []bson.Raw
	done := false
	if batchSize != 0 {
		if batch, done, err = src.Next(ctx, req.on, batchSize); err != nil {
			stream.Close()
			return nil, err
		}
	}
	var id int64
	if done {
		stream.Close()
	} else {
		id = h.openCursor(req, ns, src, len(batch)).id
	}
	reply := cursorReply(id, ns, rawArray(batch), true)
	addResumeToken(reply, src)
	return reply, nil
}

// addResumeToken puts the cursor's postBatchResumeToken in a reply, which
// drivers resume from. A stream still before its startAtOperationTime has
// none yet.
func addResumeToken(reply bson.D, src *streamSource) {
	tok := src.resumeToken()
	if tok == nil {
		return
	}
	cur := reply[0].Value.(bson.D)
	reply[0].Value = append(cur, bson.E{Key: "postBatchResumeToken", Value: tok})
}

// streamSource is a change stream's cursor.
type streamSource struct {
	h      *Handlers
	stream *changes.Stream
	spec   *streamSpec
	db     string
	// pending are events made but not yet returned (a reply was full).
	pending []bson.Raw
	// last is the token of the last event returned, while pending is not
	// empty; the stream's position otherwise.
	last  bson.D
	ended bool
}

func (s *streamSource) AwaitData() bool { return true }

func (s *streamSource) close() { s.stream.Close() }

func (s *streamSource) resumeToken() bson.D {
	if len(s.pending) > 0 && s.last != nil {
		return s.last
	}
	if s.stream.BeforeTime() {
		return nil
	}
	return s.stream.Position().Token()
}

func (s *streamSource) Next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	until, waits := exec.AwaitUntil(ctx)
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
		if err := idle(ctx, func() {
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
func (s *streamSource) fill(ctx context.Context, on storage.On, n int, pollBy time.Time) ([]bson.Raw, error) {
	if len(s.pending) == 0 && !s.ended {
		var chs []changes.Change
		var err error
		// Reading the slot is low-tier work: the request gives its own
		// admission back meanwhile.
		// At most maxStreamBatch changes at a time, so what a stream
		// holds stays bounded whatever its batch size.
		limit := maxStreamBatch
		if n > 0 {
			limit = min(n, limit)
		}
		ierr := idle(ctx, func() {
			// Reading waits for low-tier admission, which high-tier
			// work may hold back past the await time: then the batch is
			// empty, not an error.
			pctx, cancel := context.WithDeadline(ctx, pollBy)
			defer cancel()
			chs, err = s.stream.Next(pctx, limit)
			if err != nil && pctx.Err() != nil && ctx.Err() == nil {
				chs, err = nil, nil
			}
		})
		if errors.Is(err, changes.ErrSlotLost) {
			s.h.dropHub(s.stream)
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
		if len(out) > 0 && size+exec.ElemSize(len(out), raw) > exec.MaxBatchBytes {
			break
		}
		size += exec.ElemSize(len(out), raw)
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

// events shapes changes as events, through the stages after $changeStream.
func (s *streamSource) events(ctx context.Context, on storage.On, chs []changes.Change) error {
	opts := s.spec.opts
	opts.Lookup = func(db, coll string, id any) (bson.D, error) {
		col, err := s.h.store.Collection(ctx, on, db, coll)
		if storage.IsCode(err, storage.ErrNamespaceNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		row, err := s.h.store.Get(ctx, on, col, storage.IDKey(id))
		if err != nil || row == nil {
			return nil, err
		}
		return bsonx.Decode(row.Doc)
	}
	sink := &exec.Collect{}
	head, err := exec.Build(s.spec.stages, sink, &exec.Env{Ctx: ctx, Now: bson.NewDateTimeFromTime(time.Now())})
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
		if s.spec.scope.Invalidates(c) {
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
		if s.spec.scope.Invalidates(c) {
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
