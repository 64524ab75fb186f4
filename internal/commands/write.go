package commands

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// maxWriteBatch is maxWriteBatchSize from hello.
const maxWriteBatch = 100000

func writeBatch(req *Request, key string) (bson.A, bool, error) {
	items, err := getArray(req.Cmd, key)
	if err != nil {
		return nil, false, err
	}
	if len(items) == 0 || len(items) > maxWriteBatch {
		return nil, false, mongoerr.Newf(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatch, len(items))
	}
	ordered, err := getBool(req.Cmd, "ordered", true)
	if err != nil {
		return nil, false, err
	}
	return items, ordered, nil
}

// indexedError is a writeError waiting for its reply slot.
type indexedError struct {
	index int
	err   error
}

func writeErrors(errs []indexedError) bson.A {
	out := bson.A{}
	for _, e := range errs {
		out = append(out, writeError(e.index, e.err))
	}
	return out
}

// writeReply is a write command's answer: n, extra, and the statements'
// writeErrors. A statement interrupted (maxTimeMS, killOp, client gone)
// fails the whole command instead, as in MongoDB, so that what runs the
// handler (a retryable write's or a transaction's statement, the write
// concern) sees an error rather than a reply.
func writeReply(n int64, errs []indexedError, extra ...bson.E) (bson.D, error) {
	for _, e := range errs {
		if isInterruption(e.err) {
			return nil, e.err
		}
	}
	reply := bson.D{{Key: "n", Value: countValue(n)}}
	reply = append(reply, extra...)
	if len(errs) > 0 {
		reply = append(reply, bson.E{Key: "writeErrors", Value: writeErrors(errs)})
	}
	return reply, nil
}

// prepareDoc gives a document its _id, validates it and encodes it.
func prepareDoc(d bson.D) (storage.Doc, error) { return exec.PrepareDoc(d) }

// writer is the exec.Write of a request on db.name, col nil while the
// collection does not exist.
func (h *Handlers) writer(ctx context.Context, req *Request, name string, col *storage.Collection) *exec.Write {
	return &exec.Write{Store: h.store, On: req.on, DB: req.DB, Name: name, Col: col, Note: planNote(ctx)}
}

func (h *Handlers) insert(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	items, ordered, err := writeBatch(req, "documents")
	if err != nil {
		return nil, err
	}
	var docs []storage.Doc
	var slots []int // docs[i] is items[slots[i]]
	var errs []indexedError
	for i, v := range items {
		d, ok := v.(bson.D)
		var doc storage.Doc
		if !ok {
			err = mongoerr.New(mongoerr.TypeMismatch, "documents to insert must be objects")
		} else {
			doc, err = prepareDoc(d)
		}
		if err != nil {
			errs = append(errs, indexedError{i, err})
			if ordered {
				break
			}
			continue
		}
		docs = append(docs, doc)
		slots = append(slots, i)
	}
	if len(docs) == 0 {
		return writeReply(0, errs)
	}
	n, serrs, err := h.writer(ctx, req, name, nil).Insert(ctx, docs, ordered)
	if err != nil {
		if n == 0 && len(serrs) == 0 {
			return nil, err
		}
		serrs = append(serrs, storage.WriteError{Index: n + len(serrs), Err: err})
	}
	if ordered && len(serrs) > 0 {
		errs = nil // the batch stopped before any later validation failure
	}
	for _, se := range serrs {
		errs = append(errs, indexedError{slots[se.Index], se.Err})
	}
	sortErrors(errs)
	return writeReply(int64(n), errs)
}

func sortErrors(errs []indexedError) {
	slices.SortStableFunc(errs, func(a, b indexedError) int { return a.index - b.index })
}

func (h *Handlers) update(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	items, ordered, err := writeBatch(req, "updates")
	if err != nil {
		return nil, err
	}
	env, err := newUpdateEnv(req.Cmd)
	if err != nil {
		return nil, err
	}
	var n, nModified int64
	var errs []indexedError
	upserted := bson.A{}
	for i, v := range items {
		stmt, ok := v.(bson.D)
		if !ok {
			errs = append(errs, indexedError{i, mongoerr.New(mongoerr.TypeMismatch, "update statements must be objects")})
		} else {
			res, err := h.updateStatement(ctx, req, name, stmt, env)
			if err != nil {
				errs = append(errs, indexedError{i, err})
			} else {
				n += res.Matched
				nModified += res.Modified
				if res.UpsertedID != nil {
					n++
					upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: res.UpsertedID}})
				}
			}
		}
		if ordered && len(errs) > 0 {
			break
		}
	}
	extra := []bson.E{{Key: "nModified", Value: countValue(nModified)}}
	if len(upserted) > 0 {
		extra = append(extra, bson.E{Key: "upserted", Value: upserted})
	}
	return writeReply(n, errs, extra...)
}

// updateStatement parses one statement of an update and runs it
// (exec.Write.Update).
func (h *Handlers) updateStatement(ctx context.Context, req *Request, name string, stmt bson.D, env *updateEnv) (exec.UpdateResult, error) {
	var res exec.UpdateResult
	q, err := getDoc(stmt, "q")
	if err != nil {
		return res, err
	}
	u, ok := lookup(stmt, "u")
	if !ok {
		return res, mongoerr.New(mongoerr.FailedToParse, "BSON field 'update.updates.u' is missing but a required field")
	}
	multi, err := getBool(stmt, "multi", false)
	if err != nil {
		return res, err
	}
	upsert, err := getBool(stmt, "upsert", false)
	if err != nil {
		return res, err
	}
	if err := checkStatement("update", stmt); err != nil {
		return res, err
	}
	if err := checkStatementHint(nil, stmt); err != nil { // hint.go: its type
		return res, err
	}
	if err := checkCollation(stmt); err != nil {
		return res, err
	}
	rs, err := env.readSpec(q, nil, 0)
	if err != nil {
		return res, err
	}
	constants, err := getDoc(stmt, "c")
	if err != nil {
		return res, err
	}
	arrayFilters, hasFilters := lookup(stmt, "arrayFilters")
	upd, err := env.parseUpdateArg(u, arrayFilters, hasFilters, constants, "update.updates.arrayFilters")
	if err != nil {
		return res, err
	}
	if multi && upd.IsReplacement() {
		return res, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	if upd.IsReplacement() {
		ctx = storage.Replacing(ctx) // a "replace" change event
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) && !upsert {
		return res, nil
	}
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return res, err
	}
	if err := checkStatementHint(col, stmt); err != nil { // hint.go
		return res, err
	}
	return h.writer(ctx, req, name, col).Update(ctx, exec.UpdateStatement{Query: q, Spec: rs, Update: upd, Multi: multi, Upsert: upsert})
}

func (h *Handlers) delete(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	items, ordered, err := writeBatch(req, "deletes")
	if err != nil {
		return nil, err
	}
	env, err := newUpdateEnv(req.Cmd)
	if err != nil {
		return nil, err
	}
	var n int64
	var errs []indexedError
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	w := h.writer(ctx, req, name, col)
	for i, v := range items {
		stmt, ok := v.(bson.D)
		var deleted int64
		if !ok {
			err = mongoerr.New(mongoerr.TypeMismatch, "delete statements must be objects")
		} else {
			deleted, err = h.deleteStatement(ctx, w, stmt, env)
		}
		n += deleted
		if err != nil {
			errs = append(errs, indexedError{i, err})
			if ordered {
				break
			}
		}
	}
	return writeReply(n, errs)
}

// deleteStatement parses one statement of a delete and runs it
// (exec.Write.Delete).
func (h *Handlers) deleteStatement(ctx context.Context, w *exec.Write, stmt bson.D, env *updateEnv) (int64, error) {
	q, err := getDoc(stmt, "q")
	if err != nil {
		return 0, err
	}
	if _, ok := lookup(stmt, "q"); !ok {
		return 0, mongoerr.New(mongoerr.FailedToParse, "BSON field 'delete.deletes.q' is missing but a required field")
	}
	limit, err := getInt(stmt, "limit", 0)
	if err != nil {
		return 0, err
	}
	if err := checkStatement("delete", stmt); err != nil {
		return 0, err
	}
	if err := checkStatementHint(w.Col, stmt); err != nil { // hint.go
		return 0, err
	}
	if err := checkCollation(stmt); err != nil {
		return 0, err
	}
	if limit != 0 && limit != 1 {
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %d", limit)
	}
	rs, err := env.readSpec(q, nil, 0)
	if err != nil {
		return 0, err
	}
	return w.Delete(ctx, rs, limit == 1)
}
