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
// delete that keeps losing its document to concurrent changes locks it
// instead. Each further round means another writer deleted or changed a
// match.
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
		if try < optimisticTries {
			n, err = w.Store.Delete(ctx, w.On, w.Col, []storage.Row{*row})
		} else {
			err = w.Store.WithRowLocked(ctx, w.On, w.Col, row.Key, func(on storage.On, locked *storage.Row) error {
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
				n, err = w.Store.Delete(ctx, on, w.Col, []storage.Row{*locked})
				return err
			})
		}
		if err != nil || n == 1 {
			return n, err
		}
	}
	return 0, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
}
