package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

func (h *Handlers) find(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var filter, sortDoc, proj bson.D
	if filter, err = getDoc(req.Cmd, "filter"); err != nil {
		return nil, err
	}
	if sortDoc, err = getDoc(req.Cmd, "sort"); err != nil {
		return nil, err
	}
	if proj, err = getDoc(req.Cmd, "projection"); err != nil {
		return nil, err
	}
	skip, err := getCount(req.Cmd, "FindCommandRequest", "skip", 0)
	if err != nil {
		return nil, err
	}
	limit, err := getCount(req.Cmd, "FindCommandRequest", "limit", 0)
	if err != nil {
		return nil, err
	}
	singleBatch, err := getBool(req.Cmd, "singleBatch", false)
	if err != nil {
		return nil, err
	}
	batchSize, err := getBatchSize(req.Cmd, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	if rest, text, err := splitText(filter); err != nil {
		return nil, err
	} else if text != nil {
		return h.findText(ctx, req, name, text, rest, sortDoc, proj, skip, limit, batchSize, singleBatch)
	}
	rs, err := findReadSpec(req.Cmd, filter, sortDoc, proj, skip, limit) // findlet.go
	if err != nil {
		return nil, err
	}
	tail, err := parseTailOptions(req.Cmd, sortDoc, skip, limit)
	if err != nil {
		return nil, err
	}
	rs.NaturalDesc = isNaturalDesc(sortDoc)
	ns := req.DB + "." + name
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	col, err := h.store.Collection(ctx, on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return cursorReply(0, ns, bson.A{}, true), nil
	}
	if err != nil {
		return nil, err
	}
	if tail.tailable {
		return h.findTailable(ctx, on, req, ns, col, rs, tail, batchSize, singleBatch)
	}
	src, err := h.read(ctx, on, col, rs).Open(ctx)
	if err != nil {
		return nil, err
	}
	return h.firstBatch(ctx, on, req, ns, src, batchSize, singleBatch)
}

// isNaturalDesc reports whether a sort is {$natural: -1}.
func isNaturalDesc(sortDoc bson.D) bool {
	if len(sortDoc) != 1 || sortDoc[0].Key != "$natural" {
		return false
	}
	n, ok := asNumber(sortDoc[0].Value)
	return ok && n < 0
}

// firstBatch runs the first batch of a new cursor and registers the cursor
// when more may follow.
func (h *Handlers) firstBatch(ctx context.Context, on storage.On, req *Request, ns string, src exec.Source, batchSize int, singleBatch bool) (bson.D, error) {
	var batch []bson.Raw
	done := false
	if batchSize != 0 || singleBatch {
		var err error
		if batch, done, err = src.Next(ctx, on, batchSize); err != nil {
			return nil, err
		}
	}
	var id int64
	if !done && !singleBatch {
		c := h.openCursor(req, ns, src, len(batch))
		c.keepTimeLimit(ctx, req.Cmd)
		id = c.id
	}
	return cursorReply(id, ns, rawArray(batch), true), nil
}

// getBatchSize reads the batchSize of find or aggregate's cursor: def when
// absent, 0 allowed, negative refused as MongoDB's parser does (51024).
func getBatchSize(cmd bson.D, def int) (int, error) {
	n, err := getCount(cmd, "cursor", "batchSize", int64(def))
	if err != nil {
		return 0, err
	}
	return int(min(n, 1<<30)), nil
}

func rawArray(docs []bson.Raw) bson.A {
	a := make(bson.A, len(docs))
	for i, d := range docs {
		a[i] = d
	}
	return a
}

func (h *Handlers) getMore(ctx context.Context, req *Request) (bson.D, error) {
	id, ok := req.Cmd[0].Value.(int64)
	if !ok {
		return nil, typeErr("getMore", "long", req.Cmd[0].Value)
	}
	coll, err := getString(req.Cmd, "collection", "")
	if err != nil {
		return nil, err
	}
	batchSize, err := getInt(req.Cmd, "batchSize", 0)
	if err != nil {
		return nil, err
	}
	if batchSize < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Batch size for getMore must be positive, but received: %d", batchSize)
	}
	c := h.cursors.get(id)
	if c == nil {
		return nil, mongoerr.Newf(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != req.DB+"."+coll {
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", req.DB, coll, c.ns)
	}
	if c.owner != cursorOwner(req.Session) {
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, spent, err := c.timeLimit(ctx)
	if err != nil {
		h.cursors.remove(id)
		return nil, err
	}
	ctx, cancel, err := getMoreContext(ctx, req.Cmd, c.src)
	if err != nil {
		spent()
		return nil, err
	}
	defer cancel()
	batch, done, err := c.src.Next(ctx, req.on, int(min(batchSize, 1<<30)))
	spent()
	if err != nil {
		h.cursors.remove(id)
		return nil, err
	}
	if done {
		h.cursors.remove(id)
		id = 0
	} else {
		c.lastUsed.Store(nowNanos())
	}
	c.origin.returned(len(batch))
	reply := cursorReply(id, c.ns, rawArray(batch), false)
	if src, ok := c.src.(*exec.ChangeSource); ok {
		addResumeToken(reply, src)
	}
	return reply, nil
}

// killCursors kills the caller's cursors on the named collection; others'
// ids are reported as not found, so they are neither killed nor revealed.
func (h *Handlers) killCursors(_ context.Context, req *Request) (bson.D, error) {
	// "$cmd.aggregate": the cursors of aggregates on a database
	// ({aggregate: 1}: $currentOp, database and deployment change streams).
	coll, _ := req.Cmd[0].Value.(string)
	if coll != "$cmd.aggregate" {
		var err error
		if coll, err = collectionName(req); err != nil {
			return nil, err
		}
	}
	ids, err := getArray(req.Cmd, "cursors")
	if err != nil {
		return nil, err
	}
	ns, owner := req.DB+"."+coll, cursorOwner(req.Session)
	killed, notFound := bson.A{}, bson.A{}
	for _, v := range ids {
		id, ok := v.(int64)
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "cursor ids must be longs")
		}
		if h.cursors.removeOwned(id, ns, owner) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return bson.D{
		{Key: "cursorsKilled", Value: killed},
		{Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}},
		{Key: "cursorsUnknown", Value: bson.A{}},
	}, nil
}

func (h *Handlers) count(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	filter, err := getDoc(req.Cmd, "query")
	if err != nil {
		return nil, err
	}
	skip, err := getCount(req.Cmd, "count", "skip", 0)
	if err != nil {
		return nil, err
	}
	limit, err := getInt(req.Cmd, "limit", 0)
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		limit = -limit // count takes a negative limit as its absolute value
	}
	if rest, text, err := splitText(filter); err != nil {
		return nil, err
	} else if text != nil {
		return h.countText(ctx, req, name, text, rest, skip, limit)
	}
	rs, err := exec.ParseReadSpec(filter, nil, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	col, err := h.store.Collection(ctx, on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return bson.D{{Key: "n", Value: int32(0)}}, nil
	}
	if err != nil {
		return nil, err
	}
	n, err := h.read(ctx, on, col, rs).Count(ctx)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "n", Value: countValue(n)}}, nil
}

// countValue is an int32 when it fits, as MongoDB replies.
func countValue(n int64) any {
	if n <= 1<<31-1 {
		return int32(n)
	}
	return n
}

// explain describes how a find, count or distinct runs: PostgreSQL's plan
// of the prefilter and, with executionStats, what running it did.
func (h *Handlers) explain(ctx context.Context, req *Request) (bson.D, error) {
	inner, err := getDoc(req.Cmd, "explain")
	if err != nil {
		return nil, err
	}
	verbosity, err := explainVerbosity(req.Cmd)
	if err != nil {
		return nil, err
	}
	if len(inner) > 0 && inner[0].Key == "aggregate" {
		sub := &Request{DB: req.DB, Cmd: inner, Session: req.Session, tier: req.tier, on: req.on}
		reply, err := h.explainAggregate(ctx, sub)
		if err != nil || verbosity == "queryPlanner" {
			return reply, err
		}
		return h.addCursorStats(ctx, sub, reply)
	}
	if len(inner) == 0 || (inner[0].Key != "find" && inner[0].Key != "count" && inner[0].Key != "distinct") {
		return nil, mongoerr.New(mongoerr.NotImplemented, "explain supports find, count, distinct and aggregate")
	}
	sub := &Request{DB: req.DB, Cmd: inner, Session: req.Session}
	name, err := collectionName(sub)
	if err != nil {
		return nil, err
	}
	filterKey := "filter"
	if inner[0].Key != "find" {
		filterKey = "query"
	}
	filter, err := getDoc(inner, filterKey)
	if err != nil {
		return nil, err
	}
	distinctKey, err := explainedDistinctKey(sub)
	if err != nil {
		return nil, err
	}
	var sortDoc bson.D
	var skip, limit int64
	switch inner[0].Key {
	case "find":
		if sortDoc, err = getDoc(inner, "sort"); err != nil {
			return nil, err
		}
		if skip, err = getInt(inner, "skip", 0); err != nil {
			return nil, err
		}
	case "count":
		if skip, err = getCount(inner, "count", "skip", 0); err != nil {
			return nil, err
		}
	}
	if inner[0].Key != "distinct" {
		if limit, err = getInt(inner, "limit", 0); err != nil {
			return nil, err
		}
		limit = max(limit, -limit) // count, and find's single batch, take its absolute value
	}
	if filter == nil {
		filter = bson.D{} // parsedQuery shows an empty filter as {}
	}
	rs, err := exec.ParseReadSpec(filter, sortDoc, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if err != nil {
		return nil, err
	}
	winning, err := h.read(ctx, req.on, col, rs).Explain(ctx, sortDoc)
	if err != nil {
		return nil, err
	}
	reply := bson.D{
		{Key: "queryPlanner", Value: bson.D{
			{Key: "namespace", Value: col.Namespace()},
			{Key: "parsedQuery", Value: filter},
			{Key: "winningPlan", Value: winning},
		}},
	}
	if verbosity != "queryPlanner" {
		stats, err := h.explainExecution(ctx, req.on, col, rs, inner[0].Key, distinctKey)
		if err != nil {
			return nil, err
		}
		reply = append(reply, bson.E{Key: "executionStats", Value: stats})
	}
	return reply, nil
}
