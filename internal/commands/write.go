package commands

import (
	"context"
	"slices"

	"tierdb/internal/bsonx"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// maxWriteBatch is maxWriteBatchSize from hello.
const maxWriteBatch = 100000

// casRetries bounds how often a write re-reads a document that changed under
// it before it locks the row (modify) or gives up (the others).
const casRetries = 100

// optimisticTries is how often modify tries compare-and-swap before it
// takes the document's row lock instead.
const optimisticTries = 8

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

func writeReply(n int64, errs []indexedError, extra ...bson.E) bson.D {
	reply := bson.D{{Key: "n", Value: countValue(n)}}
	reply = append(reply, extra...)
	if len(errs) > 0 {
		reply = append(reply, bson.E{Key: "writeErrors", Value: writeErrors(errs)})
	}
	return reply
}

// prepareDoc gives a document its _id, validates it and encodes it.
func prepareDoc(d bson.D) (storage.Doc, error) {
	d, id := update.EnsureID(d)
	if err := update.ValidateForStorage(d); err != nil {
		return storage.Doc{}, err
	}
	raw, err := bsonx.Marshal(d)
	if err != nil {
		return storage.Doc{}, mongoerr.Newf(mongoerr.BadValue, "cannot encode document: %v", err)
	}
	return storage.Doc{ID: id, D: d, Raw: raw}, nil
}

func (h *Handlers) insert(ctx context.Context, req *Request) (bson.D, error) {
	on := req.on
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
		return writeReply(0, errs), nil
	}
	col, err := h.store.CollectionForWrite(ctx, on, req.DB, name)
	if err != nil {
		return nil, err
	}
	n, serrs, err := h.store.Insert(ctx, on, col, docs, ordered)
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
	return writeReply(int64(n), errs), nil
}

func sortErrors(errs []indexedError) {
	slices.SortStableFunc(errs, func(a, b indexedError) int { return a.index - b.index })
}

// eachMatch calls fn for each document matching rs, in _id order, a batch at
// a time, until fn says stop.
func (h *Handlers) eachMatch(ctx context.Context, on storage.On, col *storage.Collection, rs *readSpec, fn func(doc bson.D, raw bson.Raw) (stop bool, err error)) error {
	src := &scanSource{store: h.store, col: col, spec: rs, params: rs.scanParams(col), raw: true, keepDecoded: true}
	notePlan(ctx, on, col, rs, src.params, false)
	for {
		batch, done, err := src.next(ctx, on, 100)
		if err != nil {
			return err
		}
		for i, raw := range batch {
			stop, err := fn(src.decoded[i], raw)
			if err != nil || stop {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// modify applies change to doc and stores the result if the document did not
// change since it was read; otherwise it re-reads it, re-checks the filter and
// tries again. A write that loses optimisticTries times to concurrent ones
// locks the row and finishes under the lock, so under any contention it is
// applied once, never refused. matched is false when the document no longer
// matches.
func (h *Handlers) modify(ctx context.Context, on storage.On, col *storage.Collection, filter *query.Filter, doc bson.D, raw bson.Raw,
	change func(bson.D) (bson.D, bool, error)) (matched, modified bool, newDoc bson.D, err error) {
	for range optimisticTries {
		matched, modified, newDoc, done, err := h.tryModify(ctx, on, col, filter, doc, raw, change)
		if done || err != nil {
			return matched, modified, newDoc, err
		}
		row, err := h.store.Get(ctx, on, col, storage.IDKey(idOf(doc)))
		if err != nil || row == nil {
			return false, false, nil, err
		}
		raw = row.Doc
		if doc, err = bsonx.Decode(raw); err != nil {
			return false, false, nil, err
		}
		if ok, err := filter.MatchErr(doc); !ok || err != nil {
			return false, false, nil, err
		}
	}
	err = h.store.WithRowLocked(ctx, on, col, storage.IDKey(idOf(doc)), func(on storage.On, row *storage.Row) error {
		if row == nil {
			return nil
		}
		locked, err := bsonx.Decode(row.Doc)
		if err != nil {
			return err
		}
		if ok, err := filter.MatchErr(locked); !ok || err != nil {
			return err
		}
		var done bool
		matched, modified, newDoc, done, err = h.tryModify(ctx, on, col, filter, locked, row.Doc, change)
		if err == nil && !done {
			err = mongoerr.New(mongoerr.InternalError, "a locked document changed under its lock")
		}
		return err
	})
	if err != nil {
		return false, false, nil, err
	}
	return matched, modified, newDoc, nil
}

// tryModify is one compare-and-swap of modify; done is false when the
// document changed since raw was read.
func (h *Handlers) tryModify(ctx context.Context, on storage.On, col *storage.Collection, filter *query.Filter, doc bson.D, raw bson.Raw,
	change func(bson.D) (bson.D, bool, error)) (matched, modified bool, newDoc bson.D, done bool, err error) {
	newDoc, changed, err := change(doc)
	if err != nil {
		return true, false, nil, true, err
	}
	if !changed {
		return true, false, doc, true, nil
	}
	next, err := prepareDoc(newDoc)
	if err != nil {
		return true, false, nil, true, err
	}
	ok, err := h.store.Replace(ctx, on, col, storage.IDKey(next.ID), raw, next)
	if err != nil || ok {
		return true, ok, next.D, true, err
	}
	return false, false, nil, false, nil
}

// idOf is a document's _id.
func idOf(doc bson.D) any {
	id, _ := lookup(doc, "_id")
	return id
}

func (h *Handlers) update(ctx context.Context, req *Request) (bson.D, error) {
	on := req.on
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
			res, err := h.updateStatement(ctx, on, req.DB, name, stmt, env)
			if err != nil {
				errs = append(errs, indexedError{i, err})
			} else {
				n += res.matched
				nModified += res.modified
				if res.upsertedID != nil {
					n++
					upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: res.upsertedID}})
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
	return writeReply(n, errs, extra...), nil
}

type updateResult struct {
	matched, modified int64
	upsertedID        any
}

func (h *Handlers) updateStatement(ctx context.Context, on storage.On, db, name string, stmt bson.D, env *updateEnv) (updateResult, error) {
	var res updateResult
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
	col, err := h.store.Collection(ctx, on, db, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) && !upsert {
		return res, nil
	}
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return res, err
	}
	if err := checkStatementHint(col, stmt); err != nil { // hint.go
		return res, err
	}
	if col != nil && rs.exact {
		if done, err := h.updateLastWritten(ctx, on, col, q[0].Value, upd, &res); done || err != nil {
			return res, err
		}
	}
	apply := func(d bson.D) (bson.D, bool, error) { return applyMatched(upd, rs.filter, d) }
	// Two rounds at most: a duplicate key on the upsert's insert may mean a
	// concurrent upsert inserted the match first (then the second round
	// updates it), or a genuine clash with a unique index (then it is the
	// error to report).
	for round := 0; round < 2; round++ {
		if col != nil {
			err = h.eachMatch(ctx, on, col, rs, func(doc bson.D, raw bson.Raw) (bool, error) {
				matched, modified, _, err := h.modify(ctx, on, col, rs.filter, doc, raw, apply)
				if matched {
					res.matched++
				}
				if modified {
					res.modified++
				}
				return err != nil || (!multi && matched), err
			})
			if err != nil || res.matched > 0 || !upsert {
				return res, err
			}
		}
		doc, err := update.UpsertDocument(rs.filter.Equalities(), upd)
		if err != nil {
			return res, err
		}
		id, err := h.insertOne(ctx, on, db, name, doc)
		if storage.IsCode(err, storage.ErrDuplicateKey) && round == 0 {
			if col == nil {
				if col, err = h.store.Collection(ctx, on, db, name); err != nil {
					return res, err
				}
			}
			continue
		}
		if err == nil {
			res.upsertedID = id
		}
		return res, err
	}
	return res, nil // not reached: round 1 always returns
}

// updateLastWritten is the one-statement update of a document by _id: it
// applies the update to the version tierdb last wrote and swaps it in if that
// is still the stored version. done is false when it could not tell (no
// remembered version, a stale one, or an outcome that depends on the stored
// version); the caller then takes the usual read-then-swap path.
func (h *Handlers) updateLastWritten(ctx context.Context, on storage.On, col *storage.Collection, id any, upd *update.Update, res *updateResult) (done bool, err error) {
	key := storage.IDKey(id)
	old := h.store.LastWritten(col, key)
	if old == nil {
		return false, nil
	}
	doc, err := bsonx.Decode(old)
	if err != nil {
		return false, nil
	}
	newDoc, changed, err := upd.Apply(doc, false)
	if err != nil || !changed {
		// Errors and no-ops must be judged on the stored version.
		return false, nil
	}
	next, err := prepareDoc(newDoc)
	if err != nil {
		return false, nil
	}
	ok, err := h.store.Replace(ctx, on, col, key, old, next)
	if err != nil {
		// The swap matched, so the remembered version was current: the
		// error (a duplicate key on a unique index) is the real outcome.
		return true, err
	}
	if ok {
		res.matched, res.modified = 1, 1
	}
	return ok, nil
}

// insertOne inserts one document, creating the collection if needed, and
// returns its _id. A duplicate key comes back as an error.
func (h *Handlers) insertOne(ctx context.Context, on storage.On, db, name string, d bson.D) (any, error) {
	doc, err := prepareDoc(d)
	if err != nil {
		return nil, err
	}
	col, err := h.store.CollectionForWrite(ctx, on, db, name)
	if err != nil {
		return nil, err
	}
	_, werrs, err := h.store.Insert(ctx, on, col, []storage.Doc{doc}, true)
	if err != nil {
		return nil, err
	}
	if len(werrs) > 0 {
		return nil, werrs[0].Err
	}
	return doc.ID, nil
}

func (h *Handlers) delete(ctx context.Context, req *Request) (bson.D, error) {
	on := req.on
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
	col, err := h.store.Collection(ctx, on, req.DB, name)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	for i, v := range items {
		stmt, ok := v.(bson.D)
		var deleted int64
		if !ok {
			err = mongoerr.New(mongoerr.TypeMismatch, "delete statements must be objects")
		} else {
			deleted, err = h.deleteStatement(ctx, on, col, stmt, env)
		}
		n += deleted
		if err != nil {
			errs = append(errs, indexedError{i, err})
			if ordered {
				break
			}
		}
	}
	return writeReply(n, errs), nil
}

func (h *Handlers) deleteStatement(ctx context.Context, on storage.On, col *storage.Collection, stmt bson.D, env *updateEnv) (int64, error) {
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
	if err := checkStatementHint(col, stmt); err != nil { // hint.go
		return 0, err
	}
	if err := checkCollation(stmt); err != nil {
		return 0, err
	}
	if limit != 0 && limit != 1 {
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %d", limit)
	}
	rs, err := env.readSpec(q, nil, 0)
	if err != nil || col == nil {
		return 0, err
	}
	var n int64
	if limit == 1 {
		// As modify: compare-and-swap first; a delete that keeps losing
		// its document to concurrent changes locks it instead. Each
		// further round means another writer deleted or changed a match.
		for try := range casRetries {
			var row *storage.Row
			err := h.eachMatch(ctx, on, col, rs, func(doc bson.D, raw bson.Raw) (bool, error) {
				id, _ := lookup(doc, "_id")
				row = &storage.Row{Key: storage.IDKey(id), Doc: raw}
				return true, nil
			})
			if err != nil || row == nil {
				return 0, err
			}
			if try < optimisticTries {
				n, err = h.store.Delete(ctx, on, col, []storage.Row{*row})
			} else {
				err = h.store.WithRowLocked(ctx, on, col, row.Key, func(on storage.On, locked *storage.Row) error {
					if locked == nil {
						return nil
					}
					doc, err := bsonx.Decode(locked.Doc)
					if err != nil {
						return err
					}
					if ok, err := rs.filter.MatchErr(doc); !ok || err != nil {
						return err
					}
					n, err = h.store.Delete(ctx, on, col, []storage.Row{*locked})
					return err
				})
			}
			if err != nil || n == 1 {
				return n, err
			}
		}
		return 0, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
	}
	var rows []storage.Row
	flush := func() error {
		d, err := h.store.Delete(ctx, on, col, rows)
		n += d
		rows = rows[:0]
		return err
	}
	err = h.eachMatch(ctx, on, col, rs, func(doc bson.D, raw bson.Raw) (bool, error) {
		id, _ := lookup(doc, "_id")
		rows = append(rows, storage.Row{Key: storage.IDKey(id), Doc: raw})
		if len(rows) >= 500 {
			return false, flush()
		}
		return false, nil
	})
	if err == nil && len(rows) > 0 {
		err = flush()
	}
	return n, err
}
