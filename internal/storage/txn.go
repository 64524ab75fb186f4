package storage

import (
	"context"
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
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Txn is one PostgreSQL transaction on one backend of a tier's pool on the
// primary: a MongoDB multi-document transaction (snapshot isolation), or a
// retryable write whose result is recorded with it. The backend is held
// until Commit or Rollback. A Txn runs one statement at a time; its owner
// serialises the use.
type Txn struct {
	s    *Store
	conn *pgxpool.Conn
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
// when it starts (READ COMMITTED, as plain writes do). The first
// statements, when given, run in the same round trip as BEGIN; their
// results are returned in order.
func (s *Store) Begin(ctx context.Context, t qos.Tier, snapshot bool, first ...Stmt) (*Txn, []pgconn.CommandTag, [][]any, error) {
	conn, err := s.current(ctx).nodes[0].pools[t].Acquire(ctx)
	if err != nil {
		return nil, nil, nil, fromPG(ctx, err)
	}
	txn := &Txn{s: s, conn: conn, snapshot: snapshot}
	begin := "BEGIN ISOLATION LEVEL READ COMMITTED"
	if snapshot {
		begin = "BEGIN ISOLATION LEVEL REPEATABLE READ"
	}
	tags, rows, err := txn.pipeline(ctx, append([]Stmt{{SQL: begin}}, first...))
	if err != nil {
		txn.Rollback(context.WithoutCancel(ctx))
		return nil, nil, nil, err
	}
	return txn, tags[1:], rows[1:], nil
}

// Stmt is one statement of a pipeline; Returning says it yields one row,
// scanned into as many values as Returning has.
type Stmt struct {
	SQL       string
	Args      []any
	Returning int
}

// pipeline sends stmts in one round trip. The first failure aborts the
// transaction (and skips the rest).
func (t *Txn) pipeline(ctx context.Context, stmts []Stmt) ([]pgconn.CommandTag, [][]any, error) {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	br := t.conn.SendBatch(ctx, b)
	tags := make([]pgconn.CommandTag, len(stmts))
	rows := make([][]any, len(stmts))
	var err error
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
	defer t.release()
	if t.failed {
		return nil, newErr(ErrInternal, "transaction already aborted")
	}
	if async {
		stmts = append([]Stmt{{SQL: `SELECT set_config('synchronous_commit', 'off', true)`, Returning: 1}}, stmts...)
		defer t.s.asyncCommits.Add(1)
	}
	tags, rows, err := t.pipeline(ctx, append(stmts, Stmt{SQL: "COMMIT"}))
	if err != nil {
		return nil, err
	}
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
		if !t.conn.Conn().IsClosed() {
			if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
				// The pool drops a backend left inside a transaction.
				t.s.log.Debug("rollback failed", "err", err)
			}
		}
		t.conn.Release()
	})
}

func (t *Txn) release() { t.once.Do(t.conn.Release) }

// exec runs one document-changing statement inside a savepoint, so a
// failure (a duplicate key) leaves the transaction usable, as it leaves a
// plain write's connection usable. The savepoint costs no round trip: the
// three statements share one pipeline.
func (t *Txn) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.failed {
		return pgconn.CommandTag{}, newErr(ErrInternal, "transaction already aborted")
	}
	b := &pgx.Batch{}
	b.Queue("SAVEPOINT tierdb_stmt")
	b.Queue(sql, args...)
	b.Queue("RELEASE SAVEPOINT tierdb_stmt")
	br := t.conn.SendBatch(ctx, b)
	_, err := br.Exec()
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
// is for a write that keeps losing its compare-and-swap to concurrent
// writes of the same document: holding the row, it takes its turn instead
// of failing. fn writes with the On it is given, which names the
// transaction.
func (s *Store) WithRowLocked(ctx context.Context, on On, c *Collection, key []byte, fn func(on On, row *Row) error) error {
	own := on.Txn == nil
	if own {
		txn, _, _, err := s.Begin(ctx, on.Tier(), false)
		if err != nil {
			return err
		}
		defer txn.Rollback(context.WithoutCancel(ctx))
		on.Txn = txn
	}
	var r Row
	err := on.Txn.conn.QueryRow(ctx, `SELECT _id, doc FROM `+c.table+` WHERE _id = $1 FOR UPDATE`, key).Scan(&r.Key, &r.Doc)
	switch {
	case err == pgx.ErrNoRows:
		err = fn(on, nil)
	case err != nil:
		return s.retryable(ctx, c, fromPG(ctx, err))
	default:
		err = fn(on, &r)
	}
	if err != nil || !own {
		return err
	}
	_, err = on.Txn.Commit(ctx, on.Async)
	return err
}
