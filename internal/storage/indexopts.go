package storage

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/query"
)

// IndexChange is what collMod may change on an existing index: nil leaves
// an option as it is.
type IndexChange struct {
	Hidden             *bool
	ExpireAfterSeconds *int64
}

// ModifyIndex applies change to the index picked by match (by name or key
// pattern) and returns it before and after. Only catalog metadata changes:
// hiding an index takes it out of query planning, a TTL change is read by
// the next expiry pass.
func (s *Store) ModifyIndex(ctx context.Context, on On, db, name string, match func(*Index) bool, change IndexChange) (before, after Index, err error) {
	err = s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		col, err := s.cat.load(ctx, tx, db, name)
		if err != nil {
			return err
		}
		if col == nil {
			return newErr(ErrNamespaceNotFound, "ns does not exist: %s.%s", db, name)
		}
		found := -1
		for i := 1; i < len(col.Indexes); i++ {
			if match(&col.Indexes[i]) {
				found = i
				break
			}
		}
		if found < 0 {
			if match(&col.Indexes[0]) {
				return newErr(ErrIllegal, "cannot modify the _id index")
			}
			return newErr(ErrIndexNotFound, "cannot find index for collMod")
		}
		secondary := append([]Index(nil), col.Indexes[1:]...)
		ix := &secondary[found-1]
		before = *ix
		if change.ExpireAfterSeconds != nil {
			if ix.ExpireAfterSeconds == nil && len(ix.Keys) != 1 {
				return newErr(ErrIllegal, "TTL indexes are single-field indexes, compound indexes do not support TTL")
			}
			v := *change.ExpireAfterSeconds
			ix.ExpireAfterSeconds = &v
		}
		if change.Hidden != nil {
			ix.Hidden = *change.Hidden
		}
		after = *ix
		raw, err := json.Marshal(secondary)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET indexes = $3 WHERE db = $1 AND name = $2`, db, name, raw)
		return err
	})
	s.cat.forget(db + "." + name)
	return before, after, err
}

// TTLIndex is a collection with one of its TTL indexes.
type TTLIndex struct {
	Col   *Collection
	Index *Index
}

// TTLIndexes lists every TTL index of every database.
func (s *Store) TTLIndexes(ctx context.Context, on On) ([]TTLIndex, error) {
	rows, err := s.catalogPool(ctx, on).Query(ctx, `SELECT db, name, tbl, uuid::text, indexes FROM `+catalogSchema+`.collections
WHERE jsonb_path_exists(indexes, '$[*].expireAfterSeconds') ORDER BY db, name`)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Collection, error) {
		var db, name, tbl, uuid string
		var raw []byte
		if err := r.Scan(&db, &name, &tbl, &uuid, &raw); err != nil {
			return nil, err
		}
		var idx []Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, err
		}
		return newCollection(db, name, uuid, tbl, idx), nil
	})
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	var out []TTLIndex
	for _, c := range cols {
		for i := 1; i < len(c.Indexes); i++ {
			if c.Indexes[i].ExpireAfterSeconds != nil {
				out = append(out, TTLIndex{Col: c, Index: &c.Indexes[i]})
			}
		}
	}
	return out, nil
}

// KeyColumn describes ix's key column for pushdown, hidden or not (the TTL
// monitor reads through a hidden TTL index too, as MongoDB's does).
func (c *Collection) KeyColumn(ix *Index) query.KeyColumn { return ix.keyColumn() }
