package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/changes"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
)

// Change streams: an aggregate whose first stage is $changeStream reads
// the hub of package changes instead of a collection. Here: parsing, the
// privileges, opening the stream in the hub and registering its cursor,
// an exec.ChangeSource, which makes the events. The cursor never ends by
// itself (only an invalidate event ends it); each getMore waits for new
// events up to its maxTimeMS (1 s by default) without holding its
// admission (idle), and the hub reads PostgreSQL at the low tier.

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
	src := &exec.ChangeSource{Store: h.store, Stream: stream, Scope: sp.scope, Options: sp.opts, Stages: sp.stages,
		Idle: idle, Lost: func() { h.dropHub(stream) }}
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
func addResumeToken(reply bson.D, src *exec.ChangeSource) {
	tok := src.ResumeToken()
	if tok == nil {
		return
	}
	cur := reply[0].Value.(bson.D)
	reply[0].Value = append(cur, bson.E{Key: "postBatchResumeToken", Value: tok})
}
