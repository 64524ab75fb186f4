package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// CreateIndexes adds indexes to a collection (created if missing). An index
// that already exists with the same name, keys and options is left alone.
// It returns how many indexes existed before and after;
// created says whether the collection had to be created for them.
func (s *Store) CreateIndexes(ctx context.Context, on On, db, name string, specs []Index) (before, after int, created bool, err error) {
	if _, err := s.Collection(ctx, on, db, name); IsCode(err, ErrNamespaceNotFound) {
		err = s.CreateCollection(ctx, on, db, name)
		created = err == nil
		if err != nil && !IsCode(err, ErrNamespaceExists) {
			return 0, 0, false, err
		}
	} else if err != nil {
		return 0, 0, false, err
	}
	err = s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
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
			existing, err := col.Conflict(&spec)
			if err != nil {
				return err
			}
			if existing {
				continue
			}
			spec.Column = fmt.Sprintf("k_%d", nextCol)
			spec.parsePartial()
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

// Conflict reports whether spec already exists (true) or clashes with an
// existing index (error), as MongoDB decides it: an index is identified by
// its name and by its signature (keys, unique, sparse, partial filter), so
// one key pattern may carry several indexes whose signatures differ.
func (c *Collection) Conflict(spec *Index) (bool, error) {
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		switch {
		case ix.Name == spec.Name && ix.sameSignature(spec):
			if ix.sameOptions(spec) {
				return true, nil
			}
			return false, newErr(ErrIndexConflict, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s", spec.Name, ix.Name)
		case ix.Name == spec.Name:
			return false, newErr(ErrIndexNameConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", spec.Name, ix.Name)
		case ix.Text != nil && spec.Text != nil:
			return false, newErr(ErrIndexConflict, "An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s (a collection has at most one text index)", spec.Name, ix.Name)
		case ix.sameSignature(spec):
			if ix.Column == "_id" {
				return false, newErr(ErrIndexConflict, "Index with name: %s already exists with a different name", ix.Name)
			}
			return false, newErr(ErrIndexConflict, "Index already exists with a different name: %s", ix.Name)
		}
	}
	return false, nil
}

// buildChunk is how many documents an index build reads and updates per
// statement: the build holds one chunk in memory at a time.
const buildChunk = 5000

// buildIndex adds the key column (and, for a unique index, the entries
// column and table), fills them chunk by chunk from the stored documents,
// then builds the btree, the entries table's primary key (which checks
// uniqueness in one sort, not row by row) and the trigger that keeps the
// entries in step from then on; all inside the DDL transaction, which holds
// the table's lock, so no write can slip in between.
func buildIndex(ctx context.Context, tx pgx.Tx, col *Collection, ix *Index) error {
	if ix.Text != nil {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+quoteIdent(ix.Column)+` tsvector`); err != nil {
			return err
		}
		if err := fillTextIndex(ctx, tx, col, ix); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE INDEX `+quoteIdent(pgIndexName(col, ix))+` ON `+col.table+` USING gin (`+quoteIdent(ix.Column)+`)`)
		return err
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+quoteIdent(ix.Column)+` bytea`); err != nil {
		return err
	}
	entries := ix.hasEntries()
	if entries {
		if err := createEntriesTable(ctx, tx, col, ix); err != nil {
			return err
		}
	}
	if err := fillIndex(ctx, tx, col, ix); err != nil {
		return err
	}
	if entries {
		if _, err := tx.Exec(ctx, `INSERT INTO `+dataSchema+`.`+quoteIdent(entriesTable(col, ix))+` (k, id) SELECT unnest(`+quoteIdent(ix.entriesColumn())+`), _id FROM `+col.table+` WHERE `+quoteIdent(ix.entriesColumn())+` IS NOT NULL`); err != nil {
			return err
		}
	}
	// A sparse or partial index is a PostgreSQL partial index without the
	// rows of the documents it leaves out (query.NotIndexedPredicate).
	where := ""
	if ix.Sparse || ix.partial != nil {
		where = ` WHERE ` + query.NotIndexedPredicate(quoteIdent(ix.Column))
	}
	if _, err := tx.Exec(ctx, `CREATE INDEX `+quoteIdent(pgIndexName(col, ix))+` ON `+col.table+` (`+quoteIdent(ix.Column)+`)`+where); err != nil {
		return err
	}
	if !entries {
		return nil
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE `+dataSchema+`.`+quoteIdent(entriesTable(col, ix))+` ADD PRIMARY KEY (k)`); err != nil {
		if e := fromPGDup(ctx, err); IsCode(e, ErrDuplicateKey) {
			return newErr(ErrDuplicateKey, "Index build failed: E11000 duplicate key error collection: %s index: %s (existing documents have duplicate keys)", col.Namespace(), ix.Name)
		}
		return err
	}
	return createEntriesTrigger(ctx, tx, col, ix)
}

// fillIndex computes ix's key (and, for a unique index, its entries
// column) for every stored document.
func fillIndex(ctx context.Context, tx pgx.Tx, col *Collection, ix *Index) error {
	entries := ix.hasEntries()
	keyCol := quoteIdent(ix.Column)
	update := `UPDATE ` + col.table + ` t SET ` + keyCol + ` = d.k FROM unnest($1::bytea[], $2::bytea[]) AS d(id, k) WHERE t._id = d.id`
	if entries {
		// A document with a single-valued key has one entry, its key; a
		// multikey one (key NULL) brings its entries in $3, $4; one the
		// index leaves out (empty key) has none.
		update = `UPDATE ` + col.table + ` t SET ` + keyCol + ` = d.k, ` + quoteIdent(ix.entriesColumn()) + ` = CASE
	WHEN d.k IS NULL THEN x.arr WHEN length(d.k) = 0 THEN NULL ELSE ARRAY[d.k] END
FROM unnest($1::bytea[], $2::bytea[]) AS d(id, k)
LEFT JOIN (SELECT id, array_agg(k) AS arr FROM unnest($3::bytea[], $4::bytea[]) AS e(id, k) GROUP BY id) x ON x.id = d.id
WHERE t._id = d.id`
	}
	return eachChunk(ctx, tx, col, func(ids [][]byte, docs []bson.D) error {
		var keys, entryIDs, entryKeysFlat [][]byte
		for i, d := range docs {
			k, err := indexKey(ix, d)
			if err != nil {
				return err
			}
			keys = append(keys, k)
			if entries && k == nil {
				for _, e := range entryKeys(ix, d) {
					entryIDs = append(entryIDs, ids[i])
					entryKeysFlat = append(entryKeysFlat, e)
				}
			}
		}
		args := []any{ids, keys}
		if entries {
			args = append(args, entryIDs, entryKeysFlat)
		}
		_, err := tx.Exec(ctx, update, args...)
		return err
	})
}

// fillTextIndex computes a text index's column for every stored document.
func fillTextIndex(ctx context.Context, tx pgx.Tx, col *Collection, ix *Index) error {
	update := `UPDATE ` + col.table + ` t SET ` + quoteIdent(ix.Column) + ` = ` + catalogSchema + `.fts(ARRAY[d.l, d.a, d.b, d.c, d.e])
FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS d(id, l, a, b, c, e)
WHERE t._id = d.id AND d.l IS NOT NULL`
	return eachChunk(ctx, tx, col, func(ids [][]byte, docs []bson.D) error {
		cols := make([][]*string, 5)
		for _, d := range docs {
			v, err := textValue(ix, d)
			if err != nil {
				return err
			}
			if v == nil {
				v = make([]*string, 5)
			}
			for j := range cols {
				cols[j] = append(cols[j], v[j])
			}
		}
		_, err := tx.Exec(ctx, update, ids, cols[0], cols[1], cols[2], cols[3], cols[4])
		return err
	})
}

// eachChunk calls fn with the stored documents, buildChunk at a time,
// read in one pass through a cursor (which shows the table as it was
// before fn's updates).
func eachChunk(ctx context.Context, tx pgx.Tx, col *Collection, fn func(ids [][]byte, docs []bson.D) error) error {
	if _, err := tx.Exec(ctx, `DECLARE tierdb_build NO SCROLL CURSOR FOR SELECT _id, doc FROM `+col.table); err != nil {
		return err
	}
	fetch := `FETCH ` + fmt.Sprint(buildChunk) + ` FROM tierdb_build`
	for {
		rows, err := tx.Query(ctx, fetch)
		if err != nil {
			return err
		}
		var ids [][]byte
		var docs []bson.D
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
			docs = append(docs, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) > 0 {
			if err := fn(ids, docs); err != nil {
				return err
			}
		}
		if len(ids) < buildChunk {
			_, err := tx.Exec(ctx, `CLOSE tierdb_build`)
			return err
		}
	}
}

// DropIndex drops one index by name ("*" drops all but _id_). The _id index
// cannot be dropped.
func (s *Store) DropIndex(ctx context.Context, on On, db, name, index string) (before int, err error) {
	err = s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
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
