package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// deleteBatch is how many matches a multi-document delete deletes in one
// statement.
const deleteBatch = 500

// Delete runs one delete statement: every match of rs, or with limitOne
// the first. Each document is deleted only if it still holds the bytes it
// was read with (compare and delete), so a document changed meanwhile is
// not deleted on a stale judgement.
func (w *Write) Delete(ctx context.Context, rs *ReadSpec, limitOne bool) (int64, error) {
	if w.Col == nil {
		return 0, nil
	}
	if limitOne {
		return w.deleteOne(ctx, rs)
	}
	var n int64
	var rows []storage.Row
	flush := func() error {
		d, err := w.Store.Delete(ctx, w.On, w.Col, rows)
		n += d
		if err == nil && d < int64(len(rows)) {
			// Some documents changed after they were read: those that
			// still match are deleted under their row lock.
			for _, r := range rows {
				var cur *storage.Row
				if cur, err = w.Store.Get(ctx, w.On, w.Col, r.Key); err != nil {
					break
				}
				if cur == nil {
					continue // deleted: by this statement or another
				}
				var more int64
				if more, _, err = w.deleteIfMatching(ctx, rs, r.Key); err != nil {
					break
				}
				n += more
			}
		}
		rows = rows[:0]
		return err
	}
	err := w.read(rs).Each(ctx, func(doc bson.D, raw bson.Raw) (bool, error) {
		rows = append(rows, storage.Row{Key: storage.IDKey(idOf(doc)), Doc: raw})
		if len(rows) >= deleteBatch {
			return false, flush()
		}
		return false, nil
	})
	if err == nil && len(rows) > 0 {
		err = flush()
	}
	return n, err
}

// deleteOne deletes the first match. As modify: compare-and-swap first; a
// delete that loses its document to a concurrent change reads the first
// match again and locks it instead. Each further round means another
// writer deleted or changed a match.
func (w *Write) deleteOne(ctx context.Context, rs *ReadSpec) (int64, error) {
	var n int64
	for try := range casRetries {
		var row *storage.Row
		err := w.read(rs).Each(ctx, func(doc bson.D, raw bson.Raw) (bool, error) {
			row = &storage.Row{Key: storage.IDKey(idOf(doc)), Doc: raw}
			return true, nil
		})
		if err != nil || row == nil {
			return 0, err
		}
		if try == 0 {
			n, err = w.Store.Delete(ctx, w.On, w.Col, []storage.Row{*row})
		} else {
			n, _, err = w.deleteIfMatching(ctx, rs, row.Key)
		}
		if err != nil || n == 1 {
			return n, err
		}
	}
	return 0, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
}

// deleteIfMatching deletes the document with key under its row lock if it
// still exists and matches rs, and returns it as deleted.
func (w *Write) deleteIfMatching(ctx context.Context, rs *ReadSpec, key []byte) (n int64, deleted bson.D, err error) {
	err = w.Store.WithRowLocked(ctx, w.On, w.Col, key, func(on storage.On, locked *storage.Row) error {
		if locked == nil {
			return nil
		}
		doc, err := bsonx.Decode(locked.Doc)
		if err != nil {
			return err
		}
		if ok, err := rs.Filter.MatchErr(doc); !ok || err != nil {
			return err
		}
		if n, err = w.Store.Delete(ctx, on, w.Col, []storage.Row{*locked}); n == 1 {
			deleted = doc
		}
		return err
	})
	return n, deleted, err
}
