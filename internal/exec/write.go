package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// casRetries bounds how often a delete or findAndModify reads its match
// again after losing it to a concurrent change, before it gives up.
const casRetries = 100

// Write is one write command's target: the storage it goes through, where
// it runs (On: the request's tier, transaction, commit mode), the
// namespace and its collection, nil while it does not exist (an upsert
// creates it). Its methods run the statements of insert (Insert), update
// (Update), delete (Delete) and findAndModify (FindAndModify): they read
// the matches through a Read, apply the change and write each document
// back with a compare-and-swap on the bytes it was read with, so that a
// document changed meanwhile is read and judged again.
type Write struct {
	Store    Store
	On       storage.On
	DB, Name string
	Col      *storage.Collection
	// Note, when set, is told how the reads run (Read.Note).
	Note func(plan string)
}

func (w *Write) read(rs *ReadSpec) *Read {
	return &Read{Store: w.Store, On: w.On, Col: w.Col, Spec: rs, Note: w.Note}
}

// PrepareDoc gives a document its _id, validates it and encodes it.
func PrepareDoc(d bson.D) (storage.Doc, error) {
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

// Insert inserts docs (prepared by PrepareDoc), creating the collection
// when missing; its results are storage.Store.Insert's.
func (w *Write) Insert(ctx context.Context, docs []storage.Doc, ordered bool) (int, []storage.WriteError, error) {
	col, err := w.Store.CollectionForWrite(ctx, w.On, w.DB, w.Name)
	if err != nil {
		return 0, nil, err
	}
	w.Col = col
	return w.Store.Insert(ctx, w.On, col, docs, ordered)
}

// insertOne inserts one document, creating the collection if needed, and
// returns its _id. A duplicate key comes back as an error.
func (w *Write) insertOne(ctx context.Context, d bson.D) (any, error) {
	doc, err := PrepareDoc(d)
	if err != nil {
		return nil, err
	}
	_, werrs, err := w.Insert(ctx, []storage.Doc{doc}, true)
	if err != nil {
		return nil, err
	}
	if len(werrs) > 0 {
		return nil, werrs[0].Err
	}
	return doc.ID, nil
}

// refreshCol looks the collection up again (after an upsert's insert
// failed on a duplicate key, a concurrent upsert may have created it).
func (w *Write) refreshCol(ctx context.Context) error {
	col, err := w.Store.Collection(ctx, w.On, w.DB, w.Name)
	if err != nil {
		return err
	}
	w.Col = col
	return nil
}

// modify applies change to doc and stores the result if the document did not
// change since it was read. If it did (the swap was lost to a concurrent
// write), it locks the row, re-checks the filter on what it finds there and
// finishes under the lock, so under any contention it is applied once,
// never refused. It does not read and swap again: on a hot document every
// writer queued behind the winner would wake, lose again and retry, and
// that wasted work turned hot keys into a convoy (with eight tries before
// the lock, most of a hot key's writers lost two or three swaps each);
// under the lock they take their turns instead. matched is false when the
// document no longer matches.
func (w *Write) modify(ctx context.Context, filter *query.Filter, doc bson.D, raw bson.Raw,
	change func(bson.D) (bson.D, bool, error)) (matched, modified bool, newDoc bson.D, err error) {
	matched, modified, newDoc, done, err := w.tryModify(ctx, w.On, doc, raw, change)
	if done || err != nil {
		return matched, modified, newDoc, err
	}
	return w.modifyLocked(ctx, storage.IDKey(idOf(doc)), filter, change)
}

// modifyLocked is modify under the row lock of the document of key: it
// reads the document there, and applies change and stores the result if
// it still matches filter. matched is false when there is no such document
// or it does not match.
func (w *Write) modifyLocked(ctx context.Context, key []byte, filter *query.Filter,
	change func(bson.D) (bson.D, bool, error)) (matched, modified bool, newDoc bson.D, err error) {
	err = w.Store.WithRowLocked(ctx, w.On, w.Col, key, func(on storage.On, row *storage.Row) error {
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
		matched, modified, newDoc, done, err = w.tryModify(ctx, on, locked, row.Doc, change)
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

// tryModify is one compare-and-swap of modify, where on says (the row
// lock's transaction, under it); done is false when the document changed
// since raw was read.
func (w *Write) tryModify(ctx context.Context, on storage.On, doc bson.D, raw bson.Raw,
	change func(bson.D) (bson.D, bool, error)) (matched, modified bool, newDoc bson.D, done bool, err error) {
	newDoc, changed, err := change(doc)
	if err != nil {
		return true, false, nil, true, err
	}
	if !changed {
		return true, false, doc, true, nil
	}
	next, err := PrepareDoc(newDoc)
	if err != nil {
		return true, false, nil, true, err
	}
	ok, err := w.Store.Replace(ctx, on, w.Col, storage.IDKey(next.ID), raw, next)
	if err != nil || ok {
		return true, ok, next.D, true, err
	}
	return false, false, nil, false, nil
}

// idOf is a document's _id.
func idOf(doc bson.D) any {
	for _, e := range doc {
		if e.Key == "_id" {
			return e.Value
		}
	}
	return nil
}

// applyMatched applies upd to a document the query matched, with the array
// position the match recorded when the update has a "$" path.
func applyMatched(upd *update.Update, filter *query.Filter, d bson.D) (bson.D, bool, error) {
	var p update.ApplyParams
	if upd.NeedsMatchPosition() {
		p.Matched, _ = filter.MatchedPosition(d)
	}
	return upd.ApplyWith(d, p)
}
