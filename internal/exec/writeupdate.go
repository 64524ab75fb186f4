package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// UpdateStatement is one parsed statement of an update command.
type UpdateStatement struct {
	// Query is the statement's q, Spec its parse (the filter; Exact for
	// {_id: v}, which takes the last-written fast path).
	Query  bson.D
	Spec   *ReadSpec
	Update *update.Update
	Multi  bool
	Upsert bool
}

// UpdateResult is what a statement did; UpsertedID is set when it
// inserted.
type UpdateResult struct {
	Matched, Modified int64
	UpsertedID        any
}

// Update runs one update statement: every match (the first only without
// Multi) is changed by compare-and-swap (modify); with Upsert and no
// match, the document the filter's equalities and the update make is
// inserted, creating the collection if needed.
func (w *Write) Update(ctx context.Context, st UpdateStatement) (UpdateResult, error) {
	var res UpdateResult
	rs, upd := st.Spec, st.Update
	if w.Col == nil && !st.Upsert {
		return res, nil
	}
	if w.Col != nil && rs.Exact {
		id := st.Query[0].Value
		var done bool
		var err error
		if w.Store.Hot(w.Col, storage.IDKey(id)) {
			done, err = w.updateLocked(ctx, id, rs.Filter, upd, &res)
		} else {
			done, err = w.updateLastWritten(ctx, id, upd, &res)
		}
		if done || err != nil {
			return res, err
		}
	}
	apply := func(d bson.D) (bson.D, bool, error) { return applyMatched(upd, rs.Filter, d) }
	// Two rounds at most: a duplicate key on the upsert's insert may mean a
	// concurrent upsert inserted the match first (then the second round
	// updates it), or a genuine clash with a unique index (then it is the
	// error to report).
	for round := 0; round < 2; round++ {
		if w.Col != nil {
			err := w.read(rs).Each(ctx, func(doc bson.D, raw bson.Raw) (bool, error) {
				matched, modified, _, err := w.modify(ctx, rs.Filter, doc, raw, apply)
				if matched {
					res.Matched++
				}
				if modified {
					res.Modified++
				}
				return err != nil || (!st.Multi && matched), err
			})
			if err != nil || res.Matched > 0 || !st.Upsert {
				return res, err
			}
		}
		doc, err := update.UpsertDocument(rs.Filter.Equalities(), upd)
		if err != nil {
			return res, err
		}
		id, err := w.insertOne(ctx, doc)
		if storage.IsCode(err, storage.ErrDuplicateKey) && round == 0 {
			if w.Col == nil {
				if err := w.refreshCol(ctx); err != nil {
					return res, err
				}
			}
			continue
		}
		if err == nil {
			res.UpsertedID = id
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
func (w *Write) updateLastWritten(ctx context.Context, id any, upd *update.Update, res *UpdateResult) (done bool, err error) {
	key := storage.IDKey(id)
	old := w.Store.LastWritten(w.Col, key)
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
	next, err := PrepareDoc(newDoc)
	if err != nil {
		return false, nil
	}
	ok, err := w.Store.Replace(ctx, w.On, w.Col, key, old, next)
	if err != nil {
		// The swap matched, so the remembered version was current: the
		// error (a duplicate key on a unique index) is the real outcome.
		return true, err
	}
	if ok {
		res.Matched, res.Modified = 1, 1
	}
	return ok, nil
}

// updateLocked is the update by _id of a hot document, one whose
// compare-and-swap a concurrent write won lately (Store.Hot): it takes the
// row lock first and updates the document under it, in two round trips
// and one wait in the row's queue, where a swap would most likely lose and
// lock after all. done is false when there is no such document (nothing
// to update, or an upsert to insert): the usual path decides then.
func (w *Write) updateLocked(ctx context.Context, id any, filter *query.Filter, upd *update.Update, res *UpdateResult) (done bool, err error) {
	matched, modified, _, err := w.modifyLocked(ctx, storage.IDKey(id), filter, func(d bson.D) (bson.D, bool, error) { return applyMatched(upd, filter, d) })
	if matched {
		res.Matched = 1
	}
	if modified {
		res.Modified = 1
	}
	return matched, err
}
