package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// CollectionStats are a collection's figures as PostgreSQL knows them.
// Sizes are bytes.
type CollectionStats struct {
	// Count is the exact number of documents; DataSize the sum of their
	// BSON sizes (what MongoDB calls size).
	Count, DataSize int64
	// TableSize is the heap of the collection's table with its TOAST
	// (pg_table_size): MongoDB's storageSize.
	TableSize int64
	// IndexSizes is each index's size by MongoDB index name: the btree
	// over its key column (the _id index is the primary key), plus the
	// entries table of a unique index, every fork of each.
	IndexSizes map[string]int64
	// TotalSize is TableSize plus the indexes' sizes: everything the
	// collection occupies (what pg_total_relation_size says of the table,
	// plus the entries tables).
	TotalSize int64
}

// TotalIndexSize sums IndexSizes.
func (st *CollectionStats) TotalIndexSize() int64 {
	var n int64
	for _, v := range st.IndexSizes {
		n += v
	}
	return n
}

// CollectionStats measures c: an exact count and data size (a scan of the
// table) and the sizes PostgreSQL reports for its relations, all in one
// statement so that the parts add up to the total.
func (s *Store) CollectionStats(ctx context.Context, on On, c *Collection) (*CollectionStats, error) {
	st := &CollectionStats{IndexSizes: map[string]int64{}}
	// Each index's relations: its btree (the primary key for _id) and,
	// for a unique index, its entries table; every fork of each.
	btrees := make([]string, len(c.Indexes))
	entries := make([]string, len(c.Indexes))
	var args []any
	size := func(rel string) string {
		args = append(args, dataSchema+"."+quoteIdent(rel))
		return fmt.Sprintf("coalesce(pg_total_relation_size(to_regclass($%d)), 0)", len(args))
	}
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		if ix.Column == "_id" {
			btrees[i] = size(c.tbl + "_pkey")
		} else {
			btrees[i] = size(pgIndexName(c, ix))
		}
		entries[i] = "0"
		if ix.hasEntries() {
			entries[i] = size(entriesTable(c, ix))
		}
	}
	var btree, entry []int64
	err := s.readQ(ctx, on).QueryRow(ctx, `SELECT count(*), coalesce(sum(octet_length(doc)), 0)::bigint,
	pg_table_size('`+c.table+`'), pg_total_relation_size('`+c.table+`'),
	ARRAY[`+strings.Join(btrees, ", ")+`]::bigint[], ARRAY[`+strings.Join(entries, ", ")+`]::bigint[] FROM `+c.table, args...).
		Scan(&st.Count, &st.DataSize, &st.TableSize, &st.TotalSize, &btree, &entry)
	if err != nil {
		return nil, s.readError(ctx, on, c, err)
	}
	for i := range c.Indexes {
		st.IndexSizes[c.Indexes[i].Name] = btree[i] + entry[i]
		// The btrees are part of the table's total size; the entries
		// tables are relations of their own.
		st.TotalSize += entry[i]
	}
	return st, nil
}

// RenameCollection gives the collection from a new namespace, in the same
// database or another: only its catalog entry changes (the table keeps its
// name, which is not derived from the namespace once made). With
// dropTarget an existing target is dropped first, in the same transaction;
// without it an existing target is ErrNamespaceExists. A missing source is
// ErrNamespaceNotFound.
func (s *Store) RenameCollection(ctx context.Context, on On, fromDB, from, toDB, to string, dropTarget bool) error {
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		src, err := s.cat.load(ctx, tx, fromDB, from)
		if err != nil {
			return err
		}
		if src == nil {
			return newErr(ErrNamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
		}
		target, err := s.cat.load(ctx, tx, toDB, to)
		if err != nil {
			return err
		}
		if target != nil {
			if !dropTarget {
				return newErr(ErrNamespaceExists, "target namespace exists")
			}
			if err := dropTables(ctx, tx, target); err != nil {
				return err
			}
		}
		newUUID := "uuid"
		if fromDB != toDB {
			// MongoDB copies a collection to another database: it gets a
			// new UUID there.
			newUUID = "gen_random_uuid()"
		}
		_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET db = $3, name = $4, uuid = `+newUUID+` WHERE db = $1 AND name = $2`,
			fromDB, from, toDB, to)
		return err
	})
	s.cat.forget(fromDB + "." + from)
	s.cat.forget(toDB + "." + to)
	return err
}

// DatabaseStats sums the stats of every collection of db.
type DatabaseStats struct {
	Collections, Indexes int
	Objects, DataSize    int64
	StorageSize          int64
	IndexSize, TotalSize int64
}

// DatabaseStats measures every collection of db (none: all zero).
func (s *Store) DatabaseStats(ctx context.Context, on On, db string) (*DatabaseStats, error) {
	cols, err := s.ListCollections(ctx, on, db)
	if err != nil {
		return nil, err
	}
	out := &DatabaseStats{}
	for _, c := range cols {
		st, err := s.CollectionStats(ctx, on, c)
		if IsCode(err, ErrNamespaceNotFound) {
			continue // dropped meanwhile
		}
		if err != nil {
			return nil, err
		}
		out.Collections++
		out.Indexes += len(c.Indexes)
		out.Objects += st.Count
		out.DataSize += st.DataSize
		out.StorageSize += st.TableSize
		out.IndexSize += st.TotalIndexSize()
		out.TotalSize += st.TotalSize
	}
	return out, nil
}
