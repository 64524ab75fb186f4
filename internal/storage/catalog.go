package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
)

// Schema names. tierdb keeps its catalog apart from the collection tables so a
// user listing the data schema sees only collections.
const (
	catalogSchema = "tierdb"
	dataSchema    = "tierdb_data"
	// ddlLockID serialises DDL across every tierdb attached to the database.
	ddlLockID = 0x7469657264 // "tierd"
)

// Collection is a cached view of one catalog entry.
type Collection struct {
	DB, Name string
	UUID     string
	Indexes  []Index // the _id index first
	// Capped is set for a capped collection (see capped.go).
	Capped  *Capped
	tbl     string // PostgreSQL table name
	table   string // quoted, schema-qualified
	keyCols []query.KeyColumn
	// Statements that depend only on the columns, built once.
	insertOneSQL, replaceSQL string
}

// Namespace is "db.collection".
func (c *Collection) Namespace() string { return c.DB + "." + c.Name }

// KeyColumns describes the key columns a filter may be pushed down to.
func (c *Collection) KeyColumns() []query.KeyColumn { return c.keyCols }

// Index is a secondary index (or the implicit _id index).
type Index struct {
	Name   string     `json:"name"`
	Keys   []IndexKey `json:"keys"`
	Unique bool       `json:"unique,omitempty"`
	// Sparse leaves out documents missing every indexed field.
	Sparse bool `json:"sparse,omitempty"`
	// Partial is the partialFilterExpression as BSON: only documents it
	// matches are in the index.
	Partial []byte `json:"partial,omitempty"`
	// Hidden indexes are maintained (and enforce uniqueness) but never
	// chosen for a query.
	Hidden bool `json:"hidden,omitempty"`
	// ExpireAfterSeconds makes a TTL index; nil for others.
	ExpireAfterSeconds *int64 `json:"expireAfterSeconds,omitempty"`
	// Text makes a text index (text.go): its column is a tsvector.
	Text *TextIndex `json:"text,omitempty"`
	// Column is the key column; "_id" for the _id index.
	Column string `json:"column"`

	// partial is Partial parsed (set by newCollection).
	partial *query.Filter
}

// IndexKey is one field of an index key pattern.
type IndexKey struct {
	Field string `json:"field"`
	Desc  bool   `json:"desc,omitempty"`
	// Hashed: {field: "hashed"}, the key is a hash of the value.
	Hashed bool `json:"hashed,omitempty"`
	// Text: {field: "text"}, a field of a text index.
	Text bool `json:"text,omitempty"`
}

// isText reports a text index, or a key pattern naming one.
func (ix *Index) isText() bool {
	if ix.Text != nil {
		return true
	}
	for _, k := range ix.Keys {
		if k.Text {
			return true
		}
	}
	return false
}

// hashedField is the position of the hashed field in the key, or -1.
func (ix *Index) hashedField() int {
	for i, k := range ix.Keys {
		if k.Hashed {
			return i
		}
	}
	return -1
}

// PartialFilter is the parsed partialFilterExpression, or nil.
func (ix *Index) PartialFilter() *query.Filter { return ix.partial }

// Signature is what makes two indexes the same index for MongoDB: key
// pattern, uniqueness, sparseness and partial filter. Two indexes may share
// a key pattern when their signatures differ.
func (ix *Index) sameSignature(o *Index) bool {
	return ix.SameKeys(o) && ix.Unique == o.Unique && ix.Sparse == o.Sparse && string(ix.Partial) == string(o.Partial)
}

// sameOptions compares the options outside the signature.
func (ix *Index) sameOptions(o *Index) bool {
	ttl := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	if ix.Hidden != o.Hidden || ttl(ix.ExpireAfterSeconds) != ttl(o.ExpireAfterSeconds) {
		return false
	}
	if ix.Text == nil || o.Text == nil {
		return ix.Text == o.Text
	}
	a, b := *ix.Text, *o.Text
	return a.DefaultLanguage == b.DefaultLanguage && a.LanguageOverride == b.LanguageOverride &&
		fmt.Sprint(a.Weights) == fmt.Sprint(b.Weights)
}

// SameKeys reports whether two indexes have the same key pattern.
func (ix *Index) SameKeys(o *Index) bool {
	if ix.isText() || o.isText() {
		// A collection has at most one text index, whose key pattern
		// MongoDB shows as {_fts: "text", _ftsx: 1} whatever its fields.
		return ix.isText() && o.isText()
	}
	if len(ix.Keys) != len(o.Keys) {
		return false
	}
	for i := range ix.Keys {
		if ix.Keys[i] != o.Keys[i] {
			return false
		}
	}
	return true
}

var idIndex = Index{Name: "_id_", Keys: []IndexKey{{Field: "_id"}}, Unique: true, Column: "_id"}

type catalog struct {
	s  *Store
	mu sync.RWMutex
	// cache maps namespace to collection; a missing entry means "ask PostgreSQL".
	cache map[string]*Collection
}

func newCatalog(s *Store) *catalog { return &catalog{s: s, cache: map[string]*Collection{}} }

func (c *catalog) bootstrap(ctx context.Context) error {
	return c.ddl(ctx, On{}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
CREATE SCHEMA IF NOT EXISTS `+catalogSchema+`;
CREATE SCHEMA IF NOT EXISTS `+dataSchema+`;
CREATE SEQUENCE IF NOT EXISTS `+catalogSchema+`.table_seq;
`+textSQL+`
CREATE TABLE IF NOT EXISTS `+catalogSchema+`.collections (
	db       text NOT NULL,
	name     text NOT NULL,
	tbl      text NOT NULL UNIQUE,
	uuid     uuid NOT NULL DEFAULT gen_random_uuid(),
	indexes  jsonb NOT NULL DEFAULT '[]',
	next_col int NOT NULL DEFAULT 1,
	created  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (db, name)
);`+authTablesSQL+recordsSQL+cappedSQL+droppedTablesSQL+viewsSQL)
		return err
	})
}

// ddl runs fn in a transaction holding the DDL lock, on on's catalogPool.
func (c *catalog) ddl(ctx context.Context, on On, fn func(tx pgx.Tx) error) error {
	if on.Txn != nil {
		// A retryable write's retry must not create anything (a
		// collection dropped since the first run, say).
		if prev, err := on.Txn.Settled(ctx); err != nil || prev != nil {
			return cmp.Or(err, errSettled)
		}
	}
	tx, err := c.s.catalogPool(ctx, on).Begin(ctx)
	if err != nil {
		return fromPG(ctx, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(ddlLockID)); err != nil {
		return fromPG(ctx, err)
	}
	if err := fn(tx); err != nil {
		return fromPG(ctx, err)
	}
	return fromPG(ctx, tx.Commit(ctx))
}

func (c *catalog) forget(ns string) {
	c.mu.Lock()
	delete(c.cache, ns)
	c.mu.Unlock()
}

func (c *catalog) forgetDB(db string) {
	c.mu.Lock()
	for ns, col := range c.cache {
		if col.DB == db {
			delete(c.cache, ns)
		}
	}
	c.mu.Unlock()
}

type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// load reads one catalog entry; nil, nil when it does not exist.
func (c *catalog) load(ctx context.Context, q rowQuerier, db, name string) (*Collection, error) {
	var tbl, uuid string
	var raw, capped []byte
	err := q.QueryRow(ctx, `SELECT tbl, uuid::text, indexes, capped FROM `+catalogSchema+`.collections WHERE db = $1 AND name = $2`, db, name).
		Scan(&tbl, &uuid, &raw, &capped)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	var idx []Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, &Error{Code: ErrInternal, Msg: "corrupt catalog entry", Cause: err}
	}
	col := newCollection(db, name, uuid, tbl, idx)
	if col.Capped, err = parseCapped(capped); err != nil {
		return nil, err
	}
	return col, nil
}

// NewCollection describes a collection with the _id index and the
// secondary indexes given, as the catalog does, without storing anything:
// for fakes of the Store in tests.
func NewCollection(db, name, uuid string, secondary []Index) *Collection {
	return newCollection(db, name, uuid, "fake_"+uuid, secondary)
}

func newCollection(db, name, uuid, tbl string, secondary []Index) *Collection {
	col := &Collection{DB: db, Name: name, UUID: uuid, tbl: tbl, table: dataSchema + "." + quoteIdent(tbl)}
	col.Indexes = append([]Index{idIndex}, secondary...)
	for i := range col.Indexes {
		ix := &col.Indexes[i]
		ix.parsePartial()
		if ix.Hidden || ix.Text != nil {
			continue // maintained, never planned; text: only $text reads it
		}
		col.keyCols = append(col.keyCols, ix.keyColumn())
	}
	cols, wraps := col.columns(), col.columnWraps()
	col.insertOneSQL, _ = insertSQL(col.table, cols, wraps, [][]any{make([]any, len(cols))})
	sets := make([]string, 0, len(cols)-1)
	for j := 1; j < len(cols); j++ {
		sets = append(sets, fmt.Sprintf("%s = "+wrapOr(wraps[j]), cols[j], fmt.Sprintf("$%d", j+2)))
	}
	col.replaceSQL = `UPDATE ` + col.table + ` SET ` + strings.Join(sets, ", ") + ` WHERE _id = $1 AND doc = $2`
	return col
}

// parsePartial sets partial from Partial.
func (ix *Index) parsePartial() {
	ix.partial = nil
	if len(ix.Partial) == 0 {
		return
	}
	if d, err := bsonx.Decode(ix.Partial); err == nil {
		ix.partial, _ = query.ParseFilter(d)
	}
	if ix.partial == nil {
		// Cannot happen for a filter createIndexes accepted; never guess
		// which documents are in the index.
		ix.partial, _ = query.ParseFilter(bson.D{{Key: "$expr", Value: false}})
	}
}

// keyColumn describes ix's key column for pushdown.
func (ix *Index) keyColumn() query.KeyColumn {
	kc := query.KeyColumn{Column: quoteIdent(ix.Column), Nullable: ix.Column != "_id", Sparse: ix.Sparse, Partial: ix.partial}
	for i, k := range ix.Keys {
		kc.Fields = append(kc.Fields, k.Field)
		kc.Hashed = kc.Hashed || (i == 0 && k.Hashed)
	}
	return kc
}

// Collection returns the collection, or ErrNamespaceNotFound.
func (s *Store) Collection(ctx context.Context, on On, db, name string) (*Collection, error) {
	ns := db + "." + name
	s.cat.mu.RLock()
	col := s.cat.cache[ns]
	s.cat.mu.RUnlock()
	if col != nil {
		return col, nil
	}
	col, err := s.cat.load(ctx, s.catalogPool(ctx, on), db, name)
	if err != nil {
		return nil, err
	}
	if col == nil {
		return nil, newErr(ErrNamespaceNotFound, "ns does not exist: %s", ns)
	}
	s.cat.mu.Lock()
	s.cat.cache[ns] = col
	s.cat.mu.Unlock()
	return col, nil
}

// CollectionForWrite returns the collection, creating it when missing (as
// MongoDB does on the first insert or upsert).
func (s *Store) CollectionForWrite(ctx context.Context, on On, db, name string) (*Collection, error) {
	col, err := s.Collection(ctx, on, db, name)
	if err == nil || !IsCode(err, ErrNamespaceNotFound) {
		return col, err
	}
	if err := s.CreateCollection(ctx, on, db, name); err != nil && !IsCode(err, ErrNamespaceExists) {
		return nil, err
	}
	return s.Collection(ctx, on, db, name)
}

// CreateCollection creates an empty collection; ErrNamespaceExists if it exists.
func (s *Store) CreateCollection(ctx context.Context, on On, db, name string) error {
	return s.createCollection(ctx, on, db, name, nil)
}

func (s *Store) createCollection(ctx context.Context, on On, db, name string, capped *Capped) error {
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		existing, err := s.cat.load(ctx, tx, db, name)
		if err != nil {
			return err
		}
		if existing != nil {
			return newErr(ErrNamespaceExists, "Collection %s.%s already exists.", db, name)
		}
		if isView, err := viewExists(ctx, tx, db, name); err != nil || isView {
			if err == nil {
				err = newErr(ErrNamespaceExists, "A view already exists. NS: %s.%s", db, name)
			}
			return err
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT nextval('`+catalogSchema+`.table_seq')`).Scan(&n); err != nil {
			return err
		}
		tbl := tableName(n, db, name)
		if _, err := tx.Exec(ctx, `CREATE TABLE `+dataSchema+`.`+quoteIdent(tbl)+` (_id bytea PRIMARY KEY, doc bytea NOT NULL)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, replicaIdentitySQL(dataSchema+`.`+quoteIdent(tbl))); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `INSERT INTO `+catalogSchema+`.collections (db, name, tbl) VALUES ($1, $2, $3)`, db, name, tbl); err != nil || capped == nil {
			return err
		}
		return createCappedTable(ctx, tx, tbl, capped)
	})
	s.cat.forget(db + "." + name)
	return err
}

// DropCollection drops a collection; ErrNamespaceNotFound if it does not exist.
func (s *Store) DropCollection(ctx context.Context, on On, db, name string) error {
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		col, err := s.cat.load(ctx, tx, db, name)
		if err != nil {
			return err
		}
		if col == nil {
			return newErr(ErrNamespaceNotFound, "ns not found")
		}
		return dropTables(ctx, tx, col)
	})
	s.cat.forget(db + "." + name)
	return err
}

// DropDatabase drops every collection of db. Dropping a missing database is not an error.
func (s *Store) DropDatabase(ctx context.Context, on On, db string) error {
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name FROM `+catalogSchema+`.collections WHERE db = $1`, db)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, n := range names {
			col, err := s.cat.load(ctx, tx, db, n)
			if err != nil {
				return err
			}
			if err := dropTables(ctx, tx, col); err != nil {
				return err
			}
		}
		if len(names) > 0 && s.changesOn.Load() {
			// Change streams report the database's drop after its
			// collections' (see changes.go).
			_, err = tx.Exec(ctx, dropDatabaseMessageSQL, db)
		}
		return err
	})
	s.cat.forgetDB(db)
	return err
}

// DatabaseInfo describes a database for listDatabases.
type DatabaseInfo struct {
	Name       string
	SizeOnDisk int64
}

// ListDatabases lists databases that have at least one collection.
func (s *Store) ListDatabases(ctx context.Context, on On) ([]DatabaseInfo, error) {
	rows, err := s.catalogPool(ctx, on).Query(ctx, `
SELECT db, sum(coalesce(pg_total_relation_size(to_regclass('`+dataSchema+`.' || quote_ident(tbl))), 0))::bigint
FROM `+catalogSchema+`.collections GROUP BY db ORDER BY db`)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DatabaseInfo, error) {
		var d DatabaseInfo
		err := r.Scan(&d.Name, &d.SizeOnDisk)
		return d, err
	})
	return out, fromPG(ctx, err)
}

// ListCollections lists the collections of db in name order.
func (s *Store) ListCollections(ctx context.Context, on On, db string) ([]*Collection, error) {
	rows, err := s.catalogPool(ctx, on).Query(ctx, `SELECT name, tbl, uuid::text, indexes, capped FROM `+catalogSchema+`.collections WHERE db = $1 ORDER BY name`, db)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Collection, error) {
		var name, tbl, uuid string
		var raw, capped []byte
		if err := r.Scan(&name, &tbl, &uuid, &raw, &capped); err != nil {
			return nil, err
		}
		var idx []Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, err
		}
		col := newCollection(db, name, uuid, tbl, idx)
		var err error
		col.Capped, err = parseCapped(capped)
		return col, err
	})
	return out, fromPG(ctx, err)
}

var unsafeIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// tableName makes a readable, unique PostgreSQL table name for a namespace:
// the sequence number guarantees uniqueness, the rest helps a human.
func tableName(n int64, db, name string) string {
	readable := unsafeIdent.ReplaceAllString(strings.ToLower(db+"_"+name), "_")
	if len(readable) > 40 {
		readable = readable[:40]
	}
	return fmt.Sprintf("c%d_%s", n, readable)
}

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// dropTables removes a collection's catalog entry, its table and the entries
// tables of its unique indexes.
func dropTables(ctx context.Context, tx pgx.Tx, col *Collection) error {
	for i := range col.Indexes {
		if ix := &col.Indexes[i]; ix.hasEntries() {
			if err := dropEntries(ctx, tx, col, ix); err != nil {
				return err
			}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+catalogSchema+`.collections WHERE db = $1 AND name = $2`, col.DB, col.Name); err != nil {
		return err
	}
	if col.Capped != nil {
		if _, err := tx.Exec(ctx, `DELETE FROM `+catalogSchema+`.capped_state WHERE tbl = $1`, col.tbl); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+col.table); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, rememberDroppedSQL, col.tbl, col.DB, col.Name)
	return err
}
