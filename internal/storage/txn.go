package storage

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tierdb/internal/qos"
)

// querier is what document operations need from PostgreSQL: a pool, or the
// one backend a Txn holds.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Txn is one PostgreSQL transaction on one backend of a tier's pool on the
// primary: a MongoDB multi-document transaction (snapshot isolation), or a
// retryable write whose result is recorded with it. The backend is held
// until Commit or Rollback. A Txn runs one statement at a time; its owner
// serialises the use.
//
// Beginning costs no round trip: BEGIN waits in pending and rides in front
// of the transaction's first statement, in the same pipeline.
type Txn struct {
	s    *Store
	conn *pgxpool.Conn
	// pending: statements not sent yet that must run before any other.
	pending []Stmt
	// begun: BEGIN was sent, so the backend is inside a transaction.
	begun bool
	// tier: the pool the backend came from.
	tier qos.Tier
	// write: the retryable write this transaction runs (BeginWrite).
	write *writeKey
	// mayDefer: the transaction's first write may wait to ride with the
	// commit (deferWrite); deferred: the last pending statement is that
	// write; deferredFailed: PostgreSQL refused it, so nothing committed.
	mayDefer, deferred, deferredFailed bool
	// deferredVersions: the version cache's keys of what the deferred
	// write stores, forgotten if PostgreSQL refuses it (putVersion).
	deferredVersions []string
	// dirty: the transaction has written or locked something that a
	// failed statement must not undo (see exec).
	dirty bool
	// failed: a statement failed outside a savepoint (or the backend went
	// away), so PostgreSQL has aborted the transaction.
	failed bool
	once   sync.Once
	// snapshot: a MongoDB multi-document transaction (not a retryable
	// write's own transaction).
	snapshot bool
}

// Begin starts a transaction on a backend of tier t's pool on the primary.
// snapshot gives every statement one snapshot (REPEATABLE READ, a MongoDB
// transaction's snapshot); otherwise each statement sees what is committed
// when it starts (READ COMMITTED, as plain writes do). Only the backend is
// taken now: BEGIN is sent with the first statement.
func (s *Store) Begin(ctx context.Context, t qos.Tier, snapshot bool) (*Txn, error) {
	conn, err := s.current(ctx).nodes[0].pools[t].Acquire(ctx)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	begin := beginReadCommitted
	if snapshot {
		begin = "BEGIN ISOLATION LEVEL REPEATABLE READ"
	}
	return &Txn{s: s, conn: conn, tier: t, snapshot: snapshot, pending: []Stmt{{SQL: begin}}}, nil
}

const beginReadCommitted = "BEGIN ISOLATION LEVEL READ COMMITTED"

// errAborted answers a statement of a transaction that PostgreSQL has
// aborted (or that failed before it began).
var errAborted error = newErr(ErrInternal, "transaction already aborted")

// Stmt is one statement of a pipeline; Returning says it yields one row,
// scanned into as many values as Returning has.
type Stmt struct {
	SQL       string
	Args      []any
	Returning int
}

// send sends b in one round trip behind the pending statements and reads
// the pending statements' results: the caller reads b's own from the
// results returned. A pending statement's failure closes the results and
// is returned (the transaction is aborted and b did not run).
func (t *Txn) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.failed {
		return nil, errAborted
	}
	pending := t.pending
	if len(pending) > 0 {
		all := &pgx.Batch{}
		for _, st := range pending {
			all.Queue(st.SQL, st.Args...)
		}
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
		b = all
		t.pending, t.begun = nil, true
	}
	deferred := t.deferred
	t.deferred = false
	br := t.conn.SendBatch(ctx, b)
	for range pending {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.failed = true
			// An error PostgreSQL reports aborts the transaction: nothing
			// after the deferred write ran, or will commit.
			var pe *pgconn.PgError
			t.deferredFailed = deferred && errors.As(err, &pe)
			if t.deferredFailed {
				t.s.deferredRefused.Add(1)
				for _, k := range t.deferredVersions {
					t.s.versions.forget(k)
				}
			}
			return nil, fromPG(ctx, err)
		}
	}
	t.deferredVersions = nil
	return br, nil
}

// putVersion caches raw as the stored version of the document k names
// (versionCache). A write deferred in on's transaction is not stored yet:
// its versions are forgotten again if PostgreSQL refuses it, so that the
// write's second run does not swap against a version that never was.
func (s *Store) putVersion(on On, k string, raw []byte) {
	s.versions.put(k, raw)
	if t := on.Txn; t != nil && t.deferred {
		t.deferredVersions = append(t.deferredVersions, k)
	}
}

// deferWrite holds back the first write of a retryable write's
// transaction, so that it rides in front of the statements that follow it:
// for a write of one statement, the record and COMMIT (CommitWrite), in
// one round trip instead of two (or, after the read of a
// read-modify-write, two instead of three). The statement
// is assumed to change exactly rows rows, and wrapped so that any other
// outcome (a lost compare-and-swap) fails in PostgreSQL, aborting the
// transaction as an error of the write itself would. Either way
// DeferredFailed then reports that nothing committed, and the caller runs
// the write again in a transaction that does not defer it (the wrap's
// division by zero is not the record's: see CommitWrite). It returns the
// tag the statement is assumed to return, and false when the statement
// cannot wait.
func (t *Txn) deferWrite(sql string, args []any, rows int64) (pgconn.CommandTag, bool) {
	if !t.mayDefer || t.dirty {
		return pgconn.CommandTag{}, false
	}
	t.mayDefer = false
	n := strconv.Itoa(len(args) + 1)
	t.pending = append(t.pending, Stmt{
		SQL:  `WITH w AS (` + sql + ` RETURNING 1) SELECT 1 / (count(*) = $` + n + `)::int FROM w`,
		Args: append(args[:len(args):len(args)], rows),
	})
	t.deferred, t.dirty = true, true
	t.s.deferred.Add(1)
	return pgconn.NewCommandTag("DEFERRED " + strconv.FormatInt(rows, 10)), true
}

// DeferredWrites reports how many retryable writes' first statements waited
// to ride with their commit (Txn.deferWrite), and how many of those
// PostgreSQL refused (a duplicate key, a lost compare-and-swap; also any
// error of the pipeline before them, a cancel, a backend shut down), so
// that their writes ran again.
func (s *Store) DeferredWrites() (deferred, refused int64) {
	return s.deferred.Load(), s.deferredRefused.Load()
}

// DeferredFailed reports whether PostgreSQL refused the write that
// deferWrite held back: the transaction is aborted, nothing of it
// committed, and the write is to run again without deferring.
func (t *Txn) DeferredFailed() bool { return t.deferredFailed }

// Exec, Query and QueryRow make a Txn a querier: document
// operations run in it as in a pool, and its first statement carries the
// pending ones.
func (t *Txn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.failed {
		return pgconn.CommandTag{}, errAborted
	}
	if len(t.pending) == 0 {
		return t.conn.Exec(ctx, sql, args...)
	}
	tags, _, err := t.pipeline(ctx, []Stmt{{SQL: sql, Args: args}})
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return tags[0], nil
}

func (t *Txn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.failed {
		return nil, errAborted
	}
	if len(t.pending) == 0 {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{rows, br}, nil
}

func (t *Txn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return txnRow{rows, err}
}

// batchRows are the rows of a query that rode behind pending statements:
// closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// txnRow is pgx's QueryRow over Txn.Query.
type txnRow struct {
	rows pgx.Rows
	err  error
}

func (r txnRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// pipeline sends stmts in one round trip, behind the pending statements.
// The first failure aborts the transaction (and skips the rest).
func (t *Txn) pipeline(ctx context.Context, stmts []Stmt) ([]pgconn.CommandTag, [][]any, error) {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	br, err := t.send(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	tags := make([]pgconn.CommandTag, len(stmts))
	rows := make([][]any, len(stmts))
	for i, st := range stmts {
		if st.Returning == 0 {
			tags[i], err = br.Exec()
		} else {
			vals := make([]any, st.Returning)
			ptrs := make([]any, st.Returning)
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			err = br.QueryRow().Scan(ptrs...)
			if err == pgx.ErrNoRows {
				err, vals = nil, nil
			}
			rows[i] = vals
		}
		if err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.failed = true
		return nil, nil, fromPG(ctx, err)
	}
	return tags, rows, nil
}

// Commit commits, running stmts (the record of the result, say) in the same
// round trip first. With async the commit does not wait for its WAL flush
// (see On.Async). After Commit the backend is back in its pool, whatever
// the outcome; an ErrUnavailable outcome is unknown (the commit may have
// happened).
func (t *Txn) Commit(ctx context.Context, async bool, stmts ...Stmt) ([][]any, error) {
	if async {
		stmts = append([]Stmt{{SQL: `SELECT set_config('synchronous_commit', 'off', true)`, Returning: 1}}, stmts...)
		defer t.s.asyncCommits.Add(1)
	}
	if t.deferred && !t.begun {
		// Nothing was sent yet, and a pipeline's statements before its
		// Sync are one implicit transaction (READ COMMITTED, the
		// connection's default: see newPool), so BEGIN and COMMIT can
		// stay home. Committed or not, it has ended at the Sync.
		t.pending = t.pending[1:]
		_, rows, err := t.pipeline(ctx, stmts)
		t.release()
		return rows, err
	}
	tags, rows, err := t.pipeline(ctx, append(stmts, Stmt{SQL: "COMMIT"}))
	if err != nil {
		// A statement before COMMIT failed, so COMMIT did not run: the
		// backend goes back to its pool only out of its transaction.
		t.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	t.release()
	if tag := tags[len(tags)-1].String(); tag != "COMMIT" {
		// PostgreSQL answers COMMIT of a transaction it had aborted with
		// ROLLBACK, and no error.
		return nil, newErr(ErrWriteConflict, "the transaction was rolled back at commit (%s)", tag)
	}
	return rows, nil
}

// Rollback ends the transaction without its changes and gives the backend
// back. It is safe to call more than once and after Commit.
func (t *Txn) Rollback(ctx context.Context) {
	t.once.Do(func() {
		if t.begun && !t.conn.Conn().IsClosed() {
			if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
				// The pool drops a backend left inside a transaction.
				t.s.log.Debug("rollback failed", "err", err)
			}
		}
		t.conn.Release()
	})
}

func (t *Txn) release() { t.once.Do(t.conn.Release) }

// exec runs one document-changing statement so that its failure (a
// duplicate key) leaves the transaction usable, as it leaves a plain
// write's connection usable. Until the transaction has something to keep
// (a write, a row lock, or any statement of a MongoDB transaction), a
// failure just rolls it back and begins afresh (the BEGIN riding in front
// of the next statement); after that the statement runs inside a
// savepoint. Either way a success costs one round trip, a failure two.
func (t *Txn) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.snapshot || t.dirty {
		return t.execInSavepoint(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// A statement that changed nothing (a lost swap) holds nothing
		// either: a row lock taken next runs its write without a
		// savepoint (underRowLock).
		t.dirty = t.dirty || tag.RowsAffected() > 0
		return tag, nil
	}
	t.failed = true
	if ctx.Err() == nil && !t.conn.Conn().IsClosed() {
		// (Not riding with the next statement: pgx prepares a new
		// statement before the batch runs, which an aborted transaction
		// refuses.)
		if _, rerr := t.conn.Exec(ctx, "ROLLBACK"); rerr == nil {
			t.failed, t.begun, t.pending = false, false, []Stmt{{SQL: beginReadCommitted}}
		}
	}
	return tag, err
}

// execInSavepoint is exec inside a savepoint: three statements, one
// pipeline.
func (t *Txn) execInSavepoint(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue("SAVEPOINT tierdb_stmt")
	b.Queue(sql, args...)
	b.Queue("RELEASE SAVEPOINT tierdb_stmt")
	br, err := t.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	_, err = br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return tag, nil
	}
	if ctx.Err() == nil && !t.conn.Conn().IsClosed() {
		if _, rerr := t.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT tierdb_stmt; RELEASE SAVEPOINT tierdb_stmt"); rerr == nil {
			return tag, err
		}
	}
	t.failed = true
	return tag, err
}

// Failed reports whether PostgreSQL aborted the transaction (a statement
// failed, or the backend went away); only Rollback is left.
func (t *Txn) Failed() bool { return t.failed || t.conn.Conn().IsClosed() }

// WithRowLocked runs fn with the row of key (nil if there is none) read and
// locked until its write commits (SELECT … FOR UPDATE): inside on's
// transaction, or else in a READ COMMITTED transaction of its own on a
// backend of on's tier, committed (as on.Async says) when fn succeeds. It
// is for a write that lost its compare-and-swap to a concurrent write of
// the same document: holding the row, it takes its turn instead of
// failing. fn writes with the On it is given, which names the transaction.
//
// In a transaction of its own, fn's write waits to ride with the COMMIT
// (Txn.deferWrite), so the row is held one round trip less: that time is
// what a hot document's writers queue for. If PostgreSQL refuses the write
// (a duplicate key), nothing committed, and it all runs again with the
// write sent at once, so that the write reports its own error.
func (s *Store) WithRowLocked(ctx context.Context, on On, c *Collection, key []byte, fn func(on On, row *Row) error) error {
	s.lockedWrites.Add(1)
	if on.Txn != nil {
		return s.underRowLock(ctx, on, c, key, fn)
	}
	for _, deferWrite := range []bool{true, false} {
		txn, err := s.Begin(ctx, on.Tier(), false)
		if err != nil {
			return err
		}
		txn.mayDefer = deferWrite
		own := on
		own.Txn = txn
		if err = s.underRowLock(ctx, own, c, key, fn); err == nil {
			_, err = txn.Commit(ctx, on.Async)
		}
		txn.Rollback(context.WithoutCancel(ctx))
		if !txn.DeferredFailed() {
			return err
		}
	}
	return nil // not reached: the second round sends the write at once
}

// underRowLock is WithRowLocked in on's transaction. The write under the
// lock runs without a savepoint unless the transaction already holds work
// of its own (see exec): a row locked by a transaction and then changed by
// one of its subtransactions gets a MultiXact, which every later writer
// and reader of the row pays to resolve, and under contention that turned
// a hot document's queue into a convoy. A failed write then gives the lock
// up with it, which is all it needs: fn returns the failure.
func (s *Store) underRowLock(ctx context.Context, on On, c *Collection, key []byte, fn func(on On, row *Row) error) error {
	var r Row
	err := on.Txn.QueryRow(ctx, `SELECT _id, doc FROM `+c.table+` WHERE _id = $1 FOR UPDATE`, key).Scan(&r.Key, &r.Doc)
	switch {
	case err == pgx.ErrNoRows:
		return fn(on, nil)
	case err != nil:
		return s.retryable(ctx, c, fromPG(ctx, err))
	}
	return fn(on, &r)
}
