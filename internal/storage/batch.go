package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ReplaceMany is Replace for several documents at once: one round trip
// and one transaction (the statements share PostgreSQL's implicit
// transaction), so a batch costs one commit rather than one each. ok[i]
// says whether docs[i] replaced the version olds[i]; an error (a
// duplicate key) leaves every document of the batch as it was. Inside a
// transaction the documents are replaced one by one.
func (s *Store) ReplaceMany(ctx context.Context, on On, c *Collection, keys, olds [][]byte, docs []Doc) ([]bool, error) {
	ok := make([]bool, len(docs))
	if on.Txn != nil || len(docs) == 1 {
		for i := range docs {
			done, err := s.Replace(ctx, on, c, keys[i], olds[i], docs[i])
			if err != nil {
				return nil, err
			}
			ok[i] = done
		}
		return ok, nil
	}
	b := &pgx.Batch{}
	async := on.Async
	if async {
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	for i, d := range docs {
		vals, err := c.rowValues(d.ID, d.D, d.Raw)
		if err != nil {
			return nil, err
		}
		args := make([]any, 0, len(vals)+1)
		args = append(args, keys[i], olds[i])
		args = append(args, vals[1:]...)
		b.Queue(c.replaceSQL, args...)
	}
	br := s.pool(ctx, on).SendBatch(ctx, b)
	var err error
	if async {
		_, err = br.Exec()
	}
	for i := 0; err == nil && i < len(docs); i++ {
		tag, e := br.Exec()
		err = e
		ok[i] = e == nil && tag.RowsAffected() == 1
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		for _, k := range keys {
			s.versions.forget(cacheKey(c, k))
		}
		err = fromPGDup(ctx, err)
		if IsCode(err, ErrDuplicateKey) {
			return nil, c.dupError(err, nil)
		}
		return nil, s.retryable(ctx, c, err)
	}
	if async {
		s.asyncCommits.Add(1)
	}
	for i, done := range ok {
		if done {
			s.versions.put(cacheKey(c, keys[i]), docs[i].Raw)
		} else {
			s.versions.forget(cacheKey(c, keys[i]))
		}
	}
	return ok, nil
}
