package storage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReplaceCollection makes db.from take the place of db.to in one
// transaction ($out): db.to, if it exists, is dropped, and db.from
// renamed to it, so a reader sees either the old collection or the new
// one, never a mix. A view named db.to is not replaced
// (ErrNamespaceExists).
func (s *Store) ReplaceCollection(ctx context.Context, on On, db, from, to string) error {
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		src, err := s.cat.load(ctx, tx, db, from)
		if err != nil {
			return err
		}
		if src == nil {
			return newErr(ErrNamespaceNotFound, "ns does not exist: %s.%s", db, from)
		}
		if isView, err := viewExists(ctx, tx, db, to); err != nil || isView {
			if err == nil {
				err = newErr(ErrNamespaceExists, "%s.%s is a view", db, to)
			}
			return err
		}
		dst, err := s.cat.load(ctx, tx, db, to)
		if err != nil {
			return err
		}
		if dst != nil {
			if err := dropTables(ctx, tx, dst); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET name = $3 WHERE db = $1 AND name = $2`, db, from, to)
		return err
	})
	s.cat.forget(db + "." + from)
	s.cat.forget(db + "." + to)
	return err
}

// StaleCollections lists the collections of db whose names start with
// prefix and that were created more than age ago (what a crashed $out
// left behind).
func (s *Store) StaleCollections(ctx context.Context, on On, db, prefix string, age time.Duration) ([]string, error) {
	rows, err := s.catalogPool(ctx, on).Query(ctx, `SELECT name FROM `+catalogSchema+`.collections
WHERE db = $1 AND starts_with(name, $2) AND created < now() - make_interval(secs => $3) ORDER BY name`, db, prefix, age.Seconds())
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, fromPG(ctx, err)
}
