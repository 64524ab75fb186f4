package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// Doc is a document to write: its _id, decoded form (for index keys) and raw BSON.
type Doc struct {
	ID  any
	D   bson.D
	Raw []byte
}

// WriteError is the failure of one document of a batch.
type WriteError struct {
	Index int
	Err   error
}

// DuplicateKey details a unique-index violation, as MongoDB reports it.
type DuplicateKey struct {
	Index      string
	KeyPattern bson.D
	KeyValue   bson.D
}

// Insert inserts docs. Failures of single documents (duplicate keys) come back
// as WriteErrors; with ordered, insertion stops at the first one. err is set
// only when the whole batch failed (PostgreSQL unavailable, ...); inserted then
// says how many documents were stored before it happened.
func (s *Store) Insert(ctx context.Context, on On, c *Collection, docs []Doc, ordered bool) (inserted int, werrs []WriteError, err error) {
	if len(docs) == 0 {
		return 0, nil, nil
	}
	if err := cappedInTransaction(on, c); err != nil {
		return 0, nil, err
	}
	// Fast path: the whole batch in one statement, atomically. Only when it
	// fails on a unique index, or one document is larger than its capped
	// collection, do we go document by document to find out which ones
	// fail and honour ordered semantics exactly.
	defer s.noteAppend(c)
	err = s.insertFitting(ctx, on, c, docs)
	if err == nil {
		for _, d := range docs {
			s.putVersion(on, cacheKey(c, IDKey(d.ID)), d.Raw)
		}
		return len(docs), nil, nil
	}
	if !docError(err) {
		return 0, nil, err
	}
	for i := range docs {
		err := s.insertFitting(ctx, on, c, docs[i:i+1])
		switch {
		case err == nil:
			inserted++
			s.putVersion(on, cacheKey(c, IDKey(docs[i].ID)), docs[i].Raw)
		case docError(err):
			if IsCode(err, ErrDuplicateKey) {
				err = c.dupError(err, docs[i].D)
			}
			werrs = append(werrs, WriteError{Index: i, Err: err})
			if ordered {
				return inserted, werrs, nil
			}
		default:
			return inserted, werrs, err
		}
	}
	return inserted, werrs, nil
}

// docError reports a failure of one document (not of the batch): a
// duplicate key, a value an index cannot hold, a document larger than its
// capped collection.
func docError(err error) bool {
	return IsCode(err, ErrDuplicateKey) || IsCode(err, ErrCannotIndex) || IsCode(err, ErrBadLanguage) || IsCode(err, ErrTooLarge)
}

func (s *Store) insertBatch(ctx context.Context, on On, c *Collection, docs []Doc) error {
	cols := c.columns()
	rows := make([][]any, len(docs))
	for i, d := range docs {
		var err error
		if rows[i], err = c.rowValues(d.ID, d.D, d.Raw); err != nil {
			return err
		}
	}
	var sql string
	var args []any
	if len(rows) == 1 {
		sql, args = c.insertOneSQL, rows[0]
	} else {
		sql, args = insertSQL(c.table, cols, c.columnWraps(), rows)
	}
	_, err := s.writeRows(ctx, on, int64(len(rows)), sql, args...)
	return s.retryable(ctx, c, fromPGDup(ctx, err))
}

// AsyncCommits is how many write statements have committed with On.Async
// (a batch insert is one; a retried update counts again).
func (s *Store) AsyncCommits() int64 { return s.asyncCommits.Load() }

// write runs one document-changing statement on the primary, at on's
// tier, or in on's transaction. With on.Async the statement follows a
// transaction-local set_config in the same pipeline: statements before one
// Sync share an implicit transaction, so it costs no round trip and cannot
// leak into the backend's next request.
func (s *Store) write(ctx context.Context, on On, sql string, args ...any) (pgconn.CommandTag, error) {
	return s.writeAfter(ctx, on, nil, sql, args...)
}

// writeRows is write for a statement expected to change rows rows: in a
// retryable write's transaction it may wait to ride with the commit
// (Txn.deferWrite).
func (s *Store) writeRows(ctx context.Context, on On, rows int64, sql string, args ...any) (pgconn.CommandTag, error) {
	if on.Txn != nil {
		if tag, ok := on.Txn.deferWrite(sql, args, rows); ok {
			return tag, nil
		}
	}
	return s.write(ctx, on, sql, args...)
}

// statement is one SQL statement and its arguments.
type statement struct {
	sql  string
	args []any
}

// writeAfter is write with, when first is not nil, a statement run just
// before it in the same transaction.
func (s *Store) writeAfter(ctx context.Context, on On, first *statement, sql string, args ...any) (pgconn.CommandTag, error) {
	if t := on.Txn; t != nil {
		if first != nil {
			if _, err := t.exec(ctx, first.sql, first.args...); err != nil {
				return pgconn.CommandTag{}, err
			}
		}
		return t.exec(ctx, sql, args...) // its commit decides synchronous_commit
	}
	p := s.pool(ctx, on)
	async := on.Async
	if !async && first == nil {
		return p.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	if async {
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	if first != nil {
		b.Queue(first.sql, first.args...)
	}
	b.Queue(sql, args...)
	br := p.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	for i := 0; i < b.Len() && err == nil; i++ {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && async {
		s.asyncCommits.Add(1)
	}
	return tag, err
}

// insertSQL builds one INSERT for all rows. Several rows of plain bytea
// columns go through unnest (one statement text whatever the count, so
// PostgreSQL plans it once); rows with array columns (unique indexes' entry
// keys) use a VALUES list, since unnest would flatten nested arrays.
func insertSQL(table string, cols, wraps []string, rows [][]any) (string, []any) {
	head := `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) `
	flat := true
	for _, w := range wraps {
		if w != "" {
			flat = false
		}
	}
	for _, v := range rows[0] {
		if _, isArray := v.([][]byte); isArray {
			flat = false
		}
	}
	if len(rows) > 1 && flat {
		args := make([]any, len(cols))
		casts := make([]string, len(cols))
		for j := range cols {
			column := make([][]byte, len(rows))
			for i, r := range rows {
				column[i], _ = r[j].([]byte)
			}
			args[j] = column
			casts[j] = fmt.Sprintf("$%d::bytea[]", j+1)
		}
		return head + `SELECT * FROM unnest(` + strings.Join(casts, ", ") + `)`, args
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("VALUES ")
	args := make([]any, 0, len(rows)*len(cols))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, v := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			args = append(args, v)
			fmt.Fprintf(&b, wrapOr(wraps[j]), fmt.Sprintf("$%d", len(args)))
		}
		b.WriteByte(')')
	}
	return b.String(), args
}

// retryable drops a cached collection whose table vanished under us (dropped
// by another tierdb), so the next request reloads it.
func (s *Store) retryable(_ context.Context, c *Collection, err error) error {
	if IsCode(err, ErrNamespaceNotFound) {
		s.cat.forget(c.Namespace())
	}
	return err
}

// readError is retryable for reads, except that a standby that has not yet
// replayed the creation of the collection's table shows the collection as
// it was then: empty, without error.
func (s *Store) readError(ctx context.Context, on On, c *Collection, err error) error {
	err = fromPG(ctx, err)
	if n := on.Node; n != nil && !n.Primary && IsCode(err, ErrNamespaceNotFound) {
		return nil
	}
	return s.retryable(ctx, c, err)
}

// fromPGDup is fromPG keeping the violated constraint's name.
func fromPGDup(ctx context.Context, err error) error {
	e := fromPG(ctx, err)
	var pe *pgconn.PgError
	if IsCode(e, ErrDuplicateKey) && errors.As(err, &pe) {
		return &Error{Code: ErrDuplicateKey, Msg: pe.ConstraintName, Cause: err}
	}
	return e
}

// dupError builds the client-facing duplicate key error for doc.
func (c *Collection) dupError(err error, doc bson.D) error {
	var se *Error
	constraint := ""
	if errors.As(err, &se) {
		constraint = se.Msg
	}
	ix := &c.Indexes[0]
	for i := range c.Indexes {
		if indexConstraint(c, &c.Indexes[i]) == constraint {
			ix = &c.Indexes[i]
		}
	}
	var pattern, value bson.D
	var parts []string
	for _, k := range ix.Keys {
		dir := int32(1)
		if k.Desc {
			dir = -1
		}
		v, _ := query.Lookup(doc, k.Field)
		pattern = append(pattern, bson.E{Key: k.Field, Value: dir})
		value = append(value, bson.E{Key: k.Field, Value: v})
		parts = append(parts, k.Field+": "+renderValue(v))
	}
	msg := fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: { %s }", c.Namespace(), ix.Name, strings.Join(parts, ", "))
	return &Error{Code: ErrDuplicateKey, Msg: msg, Cause: err, Dup: &DuplicateKey{Index: ix.Name, KeyPattern: pattern, KeyValue: value}}
}

func renderValue(v any) string {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
}

// indexConstraint is the PostgreSQL name of the unique constraint behind ix.
func indexConstraint(c *Collection, ix *Index) string {
	if ix.Column == "_id" {
		return c.tbl + "_pkey"
	}
	return entriesTable(c, ix) + "_pkey"
}

func pgIndexName(c *Collection, ix *Index) string {
	return c.tbl + "_" + ix.Column
}

// Row is one stored document: its _id key and raw BSON.
type Row struct {
	Key []byte
	Doc []byte
	// OrderKey is the value of the key column a KeyOrder scan walks.
	OrderKey []byte
	// Seq is a capped collection's insertion number, set by natural-order
	// scans and Tail (see capped.go).
	Seq int64
}

// ScanParams select rows by a prefilter in _id order (keyset pagination).
type ScanParams struct {
	// Where is a SQL predicate over key columns with placeholders $1..$len(Args),
	// as produced by query.Filter.SQL. Empty means all rows.
	Where string
	Args  []any
	// After continues a scan after this _id key (exclusive); nil starts at the beginning.
	After []byte
	Desc  bool
	// Limit bounds the number of rows; 0 means no bound.
	Limit int
	// Order, when set, walks a secondary index's key column instead.
	Order *KeyOrder

	// Natural scans a capped collection in insertion order (seq) rather
	// than _id order, continuing after AfterSeq; ignored for other
	// collections and with Order.
	Natural  bool
	AfterSeq int64
}

// KeyOrder makes a scan walk the key column of a secondary index, in the
// column's byte order then by _id, so that PostgreSQL reads the column's
// btree in order and a LIMIT reads only that many rows. Rows whose column
// is NULL have no place in that order: they are left out, or, with Null,
// they alone are selected (in _id order, Desc and IDDesc ignored). Which
// orders the column's bytes stand for is the caller's business.
type KeyOrder struct {
	// Column is the index's key column (Index.Column).
	Column string
	// Desc walks the column backwards; IDDesc orders ties by _id
	// backwards.
	Desc, IDDesc bool
	// After, with ScanParams.After as its _id, continues the walk after
	// that row (exclusive); both nil start at the beginning.
	After []byte
	Null  bool
}

// WalkKeyColumns is KeyColumns for the prefilter of a KeyOrder walk of
// column: the walk reads none of that column's NULL rows, so predicates
// on it need not let them through, and a range on it bounds the walk.
func (c *Collection) WalkKeyColumns(column string) []query.KeyColumn {
	cols := slices.Clone(c.keyCols)
	q := quoteIdent(column)
	for i := range cols {
		if cols[i].Column == q {
			cols[i].Nullable = false
		}
	}
	return cols
}

func (p *ScanParams) natural(c *Collection) bool {
	return p.Natural && c.Capped != nil && p.Order == nil
}

func (p *ScanParams) sql(c *Collection) (string, []any) {
	var b strings.Builder
	natural := p.natural(c)
	b.WriteString("SELECT _id, doc")
	switch o := p.Order; {
	case natural:
		b.WriteString(", seq")
	case o != nil && !o.Null:
		b.WriteString(", " + quoteIdent(o.Column))
	}
	b.WriteString(" FROM ")
	b.WriteString(c.table)
	args := append([]any(nil), p.Args...)
	conds := []string{}
	if p.Where != "" && p.Where != "TRUE" {
		conds = append(conds, "("+p.Where+")")
	}
	dir := ""
	if p.Desc {
		dir = " DESC"
	}
	order := "_id" + dir
	switch o := p.Order; {
	case natural:
		order = "seq" + dir
		if p.AfterSeq > 0 {
			args = append(args, p.AfterSeq)
			op := ">"
			if p.Desc {
				op = "<"
			}
			conds = append(conds, fmt.Sprintf("seq %s $%d", op, len(args)))
		}
	case o != nil && o.Null:
		conds = append(conds, quoteIdent(o.Column)+" IS NULL")
		order = "_id"
		if p.After != nil {
			args = append(args, p.After)
			conds = append(conds, fmt.Sprintf("_id > $%d", len(args)))
		}
	case o != nil:
		col := quoteIdent(o.Column)
		conds = append(conds, col+" IS NOT NULL")
		colOp, idOp, colDir, idDir := ">", ">", "", ""
		if o.Desc {
			colOp, colDir = "<", " DESC"
		}
		if o.IDDesc {
			idOp, idDir = "<", " DESC"
		}
		if p.After != nil && o.After != nil {
			// The bound on the column alone lets the btree start there;
			// the OR finishes the keyset condition.
			args = append(args, o.After, p.After)
			k, id := len(args)-1, len(args)
			conds = append(conds, fmt.Sprintf("%s %s= $%d AND (%s %s $%d OR _id %s $%d)", col, colOp, k, col, colOp, k, idOp, id))
		}
		order = col + colDir + ", _id" + idDir
	case p.After != nil:
		args = append(args, p.After)
		op := ">"
		if p.Desc {
			op = "<"
		}
		conds = append(conds, fmt.Sprintf("_id %s $%d", op, len(args)))
	}
	if len(conds) > 0 {
		b.WriteString(" WHERE ")
		b.WriteString(strings.Join(conds, " AND "))
	}
	b.WriteString(" ORDER BY " + order)
	if p.Limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", p.Limit)
	}
	return b.String(), args
}

// Scan returns rows matching the prefilter, in _id order (or in the
// KeyOrder's): all of them up to p.Limit, however many bytes they hold.
func (s *Store) Scan(ctx context.Context, on On, c *Collection, p ScanParams) ([]Row, error) {
	var out []Row
	for {
		ch, err := s.ScanChunk(ctx, on, c, p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ch.Rows...)
		if !ch.Cut {
			return out, nil
		}
		if p.Limit > 0 {
			p.Limit -= ch.Read
		}
		p.After, p.AfterSeq = ch.LastKey, ch.LastSeq
		if p.Order != nil && !p.Order.Null {
			o := *p.Order
			o.After = ch.LastOrderKey
			p.Order = &o
		}
	}
}

// Chunk is what ScanChunk read: the rows kept, how many rows PostgreSQL
// returned in all, and the keys of the last one (where the next chunk of a
// keyset walk starts, kept or not).
type Chunk struct {
	Rows                  []Row
	Read                  int
	LastKey, LastOrderKey []byte
	LastSeq               int64 // of a natural-order scan
	// Cut is set when the chunk stopped early, before Limit rows, because
	// the rows kept reached maxChunkBytes: more rows may follow even
	// though fewer than Limit were read.
	Cut bool
}

// maxChunkBytes bounds the bytes of the rows one chunk keeps, whatever the
// row limit and the documents' sizes (a variable for tests).
var maxChunkBytes = 32 << 20

// arenaBlock is the largest block that kept rows' bytes are copied into:
// one allocation for many small rows instead of two or three per row. A
// scan's first block fits its first row exactly and each next one doubles,
// so a point read (most requests) allocates its row's size, not 64 KB.
const arenaBlock = 64 << 10

// ScanChunk is Scan that asks keep (when not nil) about each row's
// document bytes before copying it out of the connection's buffer: rows it
// refuses cost no allocation. keep must not retain the slice. A chunk
// keeps at most about maxChunkBytes of rows (see Chunk.Cut).
func (s *Store) ScanChunk(ctx context.Context, on On, c *Collection, p ScanParams, keep func(doc []byte) bool) (Chunk, error) {
	var ch Chunk
	sql, args := p.sql(c)
	rows, err := s.readQ(ctx, on).Query(ctx, sql, args...)
	if err != nil {
		return ch, s.readError(ctx, on, c, err)
	}
	defer rows.Close()
	ordered := p.Order != nil && !p.Order.Null
	natural := p.natural(c)
	ncols := 2
	if ordered {
		ncols = 3
	}
	if p.Limit > 0 {
		// Small at first: most reads are point reads, and a larger
		// scan's appends double it.
		ch.Rows = make([]Row, 0, min(p.Limit, 4))
	}
	binary := !natural // seq is read with Scan
	for i, fd := range rows.FieldDescriptions() {
		if i < ncols && fd.Format != pgx.BinaryFormatCode {
			binary = false
		}
	}
	var arena []byte
	copyOut := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(arena)
		arena = append(arena, b...)
		return arena[start:len(arena):len(arena)]
	}
	copyRow := func(key, doc, order []byte, seq int64) Row {
		if need := len(key) + len(doc) + len(order); cap(arena)-len(arena) < need {
			arena = make([]byte, 0, max(need, min(arenaBlock, 2*cap(arena))))
		}
		return Row{Key: copyOut(key), Doc: copyOut(doc), OrderKey: copyOut(order), Seq: seq}
	}
	var lastKey, lastOrder []byte
	kept := 0
	for kept < maxChunkBytes && rows.Next() {
		ch.Read++
		var key, doc, order []byte
		var seq int64
		if binary {
			vals := rows.RawValues()
			key, doc = vals[0], vals[1]
			if ordered {
				order = vals[2]
			}
		} else {
			dest := []any{&key, &doc}
			if ordered {
				dest = append(dest, &order)
			}
			if natural {
				dest = append(dest, &seq)
			}
			if err := rows.Scan(dest...); err != nil {
				return ch, s.readError(ctx, on, c, err)
			}
		}
		// The last row's keys are needed whether it is kept or not; they
		// are copied into reused buffers, not allocated per row.
		lastKey = append(lastKey[:0], key...)
		lastOrder = append(lastOrder[:0], order...)
		ch.LastSeq = seq
		if keep != nil && !keep(doc) {
			continue
		}
		ch.Rows = append(ch.Rows, copyRow(key, doc, order, seq))
		kept += len(key) + len(doc) + len(order)
	}
	if kept >= maxChunkBytes && (p.Limit == 0 || ch.Read < p.Limit) {
		ch.Cut = true
		rows.Close() // the rest of the result is read off and dropped
	}
	if err := rows.Err(); err != nil {
		return ch, s.readError(ctx, on, c, err)
	}
	if ch.Read > 0 {
		ch.LastKey = lastKey
		if ordered {
			ch.LastOrderKey = lastOrder
		}
	}
	return ch, nil
}

// Explain returns PostgreSQL's plan for the scan, for the explain command and tests.
func (s *Store) Explain(ctx context.Context, on On, c *Collection, p ScanParams) (string, error) {
	sql, args := p.sql(c)
	rows, err := s.readQ(ctx, on).Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		return "", fromPG(ctx, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), fromPG(ctx, err)
}

// countSQL is Count's statement.
func countSQL(c *Collection, where string) string {
	sql := `SELECT count(*) FROM ` + c.table
	if where != "" && where != "TRUE" {
		sql += " WHERE " + where
	}
	return sql
}

// Replace stores newDoc in place of the row with key, but only if that row
// still holds old (compare and swap, so concurrent updates never lose one
// another's changes without holding a transaction open across a round trip).
// ok is false when the row changed or vanished since it was read.
func (s *Store) Replace(ctx context.Context, on On, c *Collection, key, old []byte, newDoc Doc) (bool, error) {
	if err := cappedInTransaction(on, c); err != nil {
		return false, err
	}
	vals, err := c.rowValues(newDoc.ID, newDoc.D, newDoc.Raw)
	if err != nil {
		return false, err
	}
	args := make([]any, 0, len(vals)+1)
	args = append(args, key, old)
	args = append(args, vals[1:]...) // the _id never changes
	var tag pgconn.CommandTag
	if replacing, _ := ctx.Value(replacingKey{}).(bool); replacing && s.changesOn.Load() {
		tag, err = s.writeReplacement(ctx, on, key, c.replaceSQL, args...)
	} else {
		tag, err = s.writeRows(ctx, on, 1, c.replaceSQL, args...)
	}
	if err != nil {
		err = fromPGDup(ctx, err)
		if IsCode(err, ErrDuplicateKey) {
			return false, c.dupError(err, newDoc.D)
		}
		return false, s.retryable(ctx, c, err)
	}
	ok := tag.RowsAffected() == 1
	if ok {
		s.putVersion(on, cacheKey(c, key), newDoc.Raw)
	} else {
		s.swapsLost.Add(1)
		s.hotDocs.mark(cacheKey(c, key), time.Now())
		s.versions.forget(cacheKey(c, key))
	}
	return ok, nil
}

// WriteConflicts reports how many compare-and-swaps (Replace, Delete)
// found the document changed or gone since it was read, by a concurrent
// write or because the version was a stale cached one, and how many writes
// took the document's row lock (WithRowLocked).
func (s *Store) WriteConflicts() (swapsLost, lockedWrites int64) {
	return s.swapsLost.Load(), s.lockedWrites.Load()
}

// Delete removes the given rows if they still hold the bytes they were read
// with, and returns how many were removed.
func (s *Store) Delete(ctx context.Context, on On, c *Collection, rows []Row) (int64, error) {
	if err := cappedInTransaction(on, c); err != nil {
		return 0, err
	}
	keys := make([][]byte, len(rows))
	docs := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i], docs[i] = r.Key, r.Doc
	}
	for _, k := range keys {
		s.versions.forget(cacheKey(c, k))
	}
	tag, err := s.writeRows(ctx, on, int64(len(rows)), `DELETE FROM `+c.table+` t USING unnest($1::bytea[], $2::bytea[]) AS d(k, v) WHERE t._id = d.k AND t.doc = d.v`, keys, docs)
	if err != nil {
		return 0, s.retryable(ctx, c, fromPG(ctx, err))
	}
	s.swapsLost.Add(int64(len(rows)) - tag.RowsAffected())
	return tag.RowsAffected(), nil
}

// Get returns the row with the given _id key, or nil.
func (s *Store) Get(ctx context.Context, on On, c *Collection, key []byte) (*Row, error) {
	var r Row
	err := s.q(ctx, on).QueryRow(ctx, `SELECT _id, doc FROM `+c.table+` WHERE _id = $1`, key).Scan(&r.Key, &r.Doc)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, s.retryable(ctx, c, fromPG(ctx, err))
	}
	return &r, nil
}

// Count returns the number of rows matching a prefilter that is exact.
func (s *Store) Count(ctx context.Context, on On, c *Collection, where string, args []any) (int64, error) {
	var n int64
	err := s.readQ(ctx, on).QueryRow(ctx, countSQL(c, where), args...).Scan(&n)
	return n, s.readError(ctx, on, c, err)
}
