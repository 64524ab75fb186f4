package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"tierdb/internal/bsonx"

	"github.com/jackc/pgx/v5"
)

// CreateIndexes adds indexes to a collection (created if missing). An index
// that already exists with the same name, keys and options is left alone.
// It returns how many indexes existed before and after;
// created says whether the collection had to be created for them.
func (s *Store) CreateIndexes(ctx context.Context, db, name string, specs []Index) (before, after int, created bool, err error) {
	if _, err := s.Collection(ctx, db, name); IsCode(err, ErrNamespaceNotFound) {
		err = s.CreateCollection(ctx, db, name)
		created = err == nil
		if err != nil && !IsCode(err, ErrNamespaceExists) {
			return 0, 0, false, err
		}
	} else if err != nil {
		return 0, 0, false, err
	}
	err = s.cat.ddl(ctx, func(tx pgx.Tx) error {
		col, err := s.cat.load(ctx, tx, db, name)
		if err != nil {
			return err
		}
		if col == nil {
			return newErr(ErrNamespaceNotFound, "ns does not exist: %s.%s", db, name)
		}
		before = len(col.Indexes)
		var nextCol int
		if err := tx.QueryRow(ctx, `SELECT next_col FROM `+catalogSchema+`.collections WHERE db = $1 AND name = $2`, db, name).Scan(&nextCol); err != nil {
			return err
		}
		for _, spec := range specs {
			existing, err := col.conflict(&spec)
			if err != nil {
				return err
			}
			if existing {
				continue
			}
			spec.Column = fmt.Sprintf("k_%d", nextCol)
			nextCol++
			if err := buildIndex(ctx, tx, col, &spec); err != nil {
				return err
			}
			capped := col.Capped
			col = newCollection(col.DB, col.Name, col.UUID, col.tbl, append(col.Indexes[1:], spec))
			col.Capped = capped
		}
		after = len(col.Indexes)
		raw, err := json.Marshal(col.Indexes[1:])
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET indexes = $3, next_col = $4 WHERE db = $1 AND name = $2`, db, name, raw, nextCol)
		return err
	})
	s.cat.forget(db + "." + name)
	return before, after, created, err
}

// conflict reports whether spec already exists (true) or clashes with an
// existing index (error), as MongoDB decides it.
func (c *Collection) conflict(spec *Index) (bool, error) {
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		sameKeys := ix.SameKeys(spec)
		switch {
		case ix.Name == spec.Name && sameKeys && ix.Unique == spec.Unique:
			return true, nil
		case ix.Name == spec.Name && !sameKeys:
			return false, newErr(ErrIndexNameConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", spec.Name, ix.Name)
		case sameKeys:
			// Same keys under another name or other options.
			if ix.Column == "_id" && !spec.Unique && ix.Name != spec.Name {
				return false, newErr(ErrIndexConflict, "Index with name: %s already exists with a different name", ix.Name)
			}
			return false, newErr(ErrIndexConflict, "Index already exists with a different name: %s", ix.Name)
		}
	}
	return false, nil
}

// buildIndex adds the key column, fills it from the stored documents, and
// creates the btree index on it, all inside the DDL transaction.
func buildIndex(ctx context.Context, tx pgx.Tx, col *Collection, ix *Index) error {
	if _, err := tx.Exec(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+quoteIdent(ix.Column)+` bytea`); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT _id, doc FROM `+col.table)
	if err != nil {
		return err
	}
	var ids, keys [][]byte
	var entries [][][]byte
	for rows.Next() {
		var id, raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return err
		}
		d, err := bsonx.Decode(raw)
		if err != nil {
			rows.Close()
			return &Error{Code: ErrInternal, Msg: "corrupt document", Cause: err}
		}
		ids = append(ids, id)
		keys = append(keys, indexKey(ix, d))
		if ix.hasEntries() {
			entries = append(entries, entryKeys(ix, d))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	const chunk = 5000
	for i := 0; i < len(ids); i += chunk {
		j := min(i+chunk, len(ids))
		if _, err := tx.Exec(ctx, `UPDATE `+col.table+` t SET `+quoteIdent(ix.Column)+` = d.k FROM unnest($1::bytea[], $2::bytea[]) AS d(id, k) WHERE t._id = d.id`, ids[i:j], keys[i:j]); err != nil {
			return err
		}
	}
	if _, err = tx.Exec(ctx, `CREATE INDEX `+quoteIdent(pgIndexName(col, ix))+` ON `+col.table+` (`+quoteIdent(ix.Column)+`)`); err != nil {
		return err
	}
	if !ix.hasEntries() {
		return nil
	}
	if err := createEntries(ctx, tx, col, ix); err != nil {
		return err
	}
	// Filling the entries column fires the trigger, which fills the entries
	// table and fails on the first duplicate.
	for i, id := range ids {
		if _, err := tx.Exec(ctx, `UPDATE `+col.table+` SET `+quoteIdent(ix.entriesColumn())+` = $2 WHERE _id = $1`, id, entries[i]); err != nil {
			if e := fromPGDup(ctx, err); IsCode(e, ErrDuplicateKey) {
				return newErr(ErrDuplicateKey, "E11000 duplicate key error collection: %s index: %s (existing documents have duplicate keys)", col.Namespace(), ix.Name)
			}
			return err
		}
	}
	return nil
}

// DropIndex drops one index by name ("*" drops all but _id_). The _id index
// cannot be dropped.
func (s *Store) DropIndex(ctx context.Context, db, name, index string) (before int, err error) {
	err = s.cat.ddl(ctx, func(tx pgx.Tx) error {
		col, err := s.cat.load(ctx, tx, db, name)
		if err != nil {
			return err
		}
		if col == nil {
			return newErr(ErrNamespaceNotFound, "ns not found %s.%s", db, name)
		}
		before = len(col.Indexes)
		if index == "_id_" {
			return newErr(ErrIllegal, "cannot drop _id index")
		}
		var keep []Index
		found := false
		for _, ix := range col.Indexes[1:] {
			if index == "*" || ix.Name == index {
				found = true
				if ix.hasEntries() {
					if err := dropEntries(ctx, tx, col, &ix); err != nil {
						return err
					}
				}
				if _, err := tx.Exec(ctx, `ALTER TABLE `+col.table+` DROP COLUMN `+quoteIdent(ix.Column)); err != nil {
					return err
				}
				continue
			}
			keep = append(keep, ix)
		}
		if !found && index != "*" {
			return newErr(ErrIndexNotFound, "index not found with name [%s]", index)
		}
		if keep == nil {
			keep = []Index{}
		}
		raw, err := json.Marshal(keep)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET indexes = $3 WHERE db = $1 AND name = $2`, db, name, raw)
		return err
	})
	s.cat.forget(db + "." + name)
	return before, err
}
