package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// FindAndModify is a parsed findAndModify: the query, sort and limit 1
// (Spec), and either Remove or Update (with Upsert and ReturnNew).
type FindAndModify struct {
	Spec      *ReadSpec
	Update    *update.Update
	Remove    bool
	Upsert    bool
	ReturnNew bool
}

// FindAndModifyResult is its lastErrorObject and value (unprojected).
type FindAndModifyResult struct {
	N               int
	UpdatedExisting bool
	UpsertedID      any
	Value           bson.D
}

// FindAndModify removes or updates the first document the query selects
// in sort order, or upserts one, and returns the document before the
// change (after it with ReturnNew). As modify and deleteOne: a change is
// first a compare-and-swap on the document as read; after a lost swap the
// first match is read again and changed under its row lock, so under
// contention writers take turns instead of losing swaps again. Each
// further round (up to casRetries) means another writer deleted or changed
// a match meanwhile.
func (w *Write) FindAndModify(ctx context.Context, fm FindAndModify) (FindAndModifyResult, error) {
	rs := fm.Spec
	upsertRounds := 0
	for round := range casRetries {
		var doc bson.D
		var raw bson.Raw
		if w.Col != nil {
			src, err := w.read(rs).Open(ctx)
			if err != nil {
				return FindAndModifyResult{}, err
			}
			batch, _, err := src.Next(ctx, w.On, 1)
			if err != nil {
				return FindAndModifyResult{}, err
			}
			if len(batch) == 1 {
				raw = batch[0]
				if doc, err = bsonx.Decode(raw); err != nil {
					return FindAndModifyResult{}, err
				}
			}
		}
		switch {
		case doc == nil && fm.Upsert:
			newDoc, err := update.UpsertDocument(rs.Filter.Equalities(), fm.Update)
			if err != nil {
				return FindAndModifyResult{}, err
			}
			prepared, err := PrepareDoc(newDoc)
			if err != nil {
				return FindAndModifyResult{}, err
			}
			id, err := w.insertOne(ctx, prepared.D)
			upsertRounds++
			if storage.IsCode(err, storage.ErrDuplicateKey) && upsertRounds == 1 {
				// Maybe a concurrent upsert inserted the match: look once more.
				if err := w.refreshCol(ctx); err != nil {
					return FindAndModifyResult{}, err
				}
				continue
			}
			if err != nil {
				return FindAndModifyResult{}, err
			}
			res := FindAndModifyResult{N: 1, UpsertedID: id}
			if fm.ReturnNew {
				res.Value = prepared.D
			}
			return res, nil
		case doc == nil:
			return FindAndModifyResult{}, nil
		case fm.Remove:
			key := storage.IDKey(idOf(doc))
			var n int64
			var err error
			if round == 0 {
				n, err = w.Store.Delete(ctx, w.On, w.Col, []storage.Row{{Key: key, Doc: raw}})
			} else {
				n, doc, err = w.deleteIfMatching(ctx, rs, key)
			}
			if err != nil {
				return FindAndModifyResult{}, err
			}
			if n == 1 {
				return FindAndModifyResult{N: 1, Value: doc}, nil
			}
		default:
			matched, _, newDoc, err := w.modify(ctx, rs.Filter, doc, raw, func(d bson.D) (bson.D, bool, error) {
				doc = d
				return applyMatched(fm.Update, rs.Filter, d)
			})
			if err != nil {
				return FindAndModifyResult{}, err
			}
			if matched {
				res := FindAndModifyResult{N: 1, UpdatedExisting: true, Value: doc}
				if fm.ReturnNew {
					res.Value = newDoc
				}
				return res, nil
			}
		}
	}
	return FindAndModifyResult{}, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
}
