package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/changes"
	"tierdb/internal/qos"
)

// recordsSQL is appended to the catalog bootstrap: one row per logical
// session, the last statement (retryable write or transaction) it ran and
// that statement's reply, as MongoDB's config.transactions. It is written
// in the same PostgreSQL transaction as the statement's changes, so the
// two commit or vanish together and a retry, on any tierdb of this
// PostgreSQL or after a failover, finds the first outcome.
const recordsSQL = `;
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.txn_records (
	lsid       bytea NOT NULL,
	uid        text NOT NULL,
	txn_number bigint NOT NULL,
	reply      bytea,
	last_use   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (lsid, uid)
)`

// SessionKey identifies a logical session durably: the driver's lsid and
// the user that owns it (so one user cannot read another's replies).
type SessionKey struct {
	LSID []byte
	User string
}

// Record is the last statement a session ran to completion.
type Record struct {
	TxnNumber int64
	Reply     []byte // nil while its transaction is open
}

// BeginRecorded begins a MongoDB transaction (see Begin, snapshot) that
// claims statement txnNumber of session k, in its first round trip. If the
// session already has that statement or a later one, nothing is begun and
// prev is the session's record: a retry, or a stale txnNumber. A
// concurrent claim of the same session waits until the other transaction
// ends.
//
// While change streams are on, the transaction also leaves its session's
// logical message (changes.TxnMessage) right after the claim, before any
// of its writes, so that the change events of its writes carry lsid and
// txnNumber.
func (s *Store) BeginRecorded(ctx context.Context, t qos.Tier, k SessionKey, txnNumber int64) (txn *Txn, prev *Record, err error) {
	stmts := []Stmt{{SQL: `
INSERT INTO ` + catalogSchema + `.txn_records AS r (lsid, uid, txn_number) VALUES ($1, $2, $3)
ON CONFLICT (lsid, uid) DO UPDATE SET txn_number = EXCLUDED.txn_number, reply = NULL, last_use = now()
WHERE r.txn_number < EXCLUDED.txn_number
RETURNING true`, Args: []any{k.LSID, k.User, txnNumber}, Returning: 1}}
	if s.changesOn.Load() {
		msg, err := changes.TxnMessage(k.LSID, k.User, txnNumber)
		if err != nil {
			return nil, nil, err
		}
		stmts = append(stmts, Stmt{SQL: txnMessageSQL, Args: []any{msg}})
	}
	txn, err = s.Begin(ctx, t, true)
	if err != nil {
		return nil, nil, err
	}
	_, rows, err := txn.pipeline(ctx, stmts)
	if err == nil && rows[0] != nil {
		return txn, nil, nil
	}
	txn.Rollback(context.WithoutCancel(ctx))
	if err != nil {
		return nil, nil, err
	}
	err = s.lostRecord(ctx, t, k, &prev)
	return nil, prev, err
}

// lostRecord loads into prev the record that made a claim fail.
func (s *Store) lostRecord(ctx context.Context, t qos.Tier, k SessionKey, prev **Record) error {
	r, err := s.LoadRecord(ctx, t, k)
	if err == nil && r == nil {
		err = newErr(ErrInternal, "session record vanished")
	}
	*prev = r
	return err
}

// CommitRecorded stores reply as the outcome of the transaction that
// BeginRecorded claimed and commits both, in one round trip (async: see
// Commit).
func (t *Txn) CommitRecorded(ctx context.Context, async bool, k SessionKey, reply []byte) error {
	_, err := t.Commit(ctx, async, Stmt{SQL: `UPDATE ` + catalogSchema + `.txn_records SET reply = $3, last_use = now() WHERE lsid = $1 AND uid = $2`,
		Args: []any{k.LSID, k.User, reply}})
	return err
}

// recordSQL records reply $4 as the outcome of statement $3 of a session,
// unless the session already has that statement or a later one: then it
// divides by zero (see isRecorded), which aborts the transaction before
// its COMMIT. A concurrent run of the same statement (a driver's retry
// racing the first attempt) waits here until the other transaction ends,
// then fails.
const recordSQL = `WITH c AS (
INSERT INTO ` + catalogSchema + `.txn_records AS r (lsid, uid, txn_number, reply) VALUES ($1, $2, $3, $4)
ON CONFLICT (lsid, uid) DO UPDATE SET txn_number = EXCLUDED.txn_number, reply = EXCLUDED.reply, last_use = now()
WHERE r.txn_number < EXCLUDED.txn_number
RETURNING 1)
SELECT 1 / count(*) FROM c`

// writeKey names a retryable write: statement n of a session.
type writeKey struct {
	k SessionKey
	n int64
}

// BeginWrite begins the transaction (see Begin, READ COMMITTED) of a
// retryable write, statement txnNumber of session k, which CommitWrite
// commits with its reply. The statement's number is checked at commit,
// not before: a retry runs the write again, inside the transaction, and
// CommitWrite rolls it back. That costs nothing when the write is not a
// retry, which is nearly always. Only DDL (an implicit collection) cannot
// wait for the commit: the transaction checks first (see Settled). With
// deferFirst the write's first statement waits to ride with the commit
// (see Txn.deferWrite, DeferredFailed).
func (s *Store) BeginWrite(ctx context.Context, t qos.Tier, k SessionKey, txnNumber int64, deferFirst bool) (*Txn, error) {
	txn, err := s.Begin(ctx, t, false)
	if err == nil {
		txn.write, txn.mayDefer = &writeKey{k, txnNumber}, deferFirst
	}
	return txn, err
}

// CommitWrite commits the write of a transaction from BeginWrite together
// with its reply, in one round trip, so that the write is applied once: if
// the session already has the write's statement or a later one (a retry,
// or a stale number), nothing commits and prev is the session's record,
// to answer from.
func (t *Txn) CommitWrite(ctx context.Context, async bool, reply []byte) (prev *Record, err error) {
	w := t.write
	_, err = t.Commit(ctx, async, Stmt{SQL: recordSQL, Args: []any{w.k.LSID, w.k.User, w.n, reply}})
	if isRecorded(err) && !t.deferredFailed {
		err = t.s.lostRecord(ctx, t.tier, w.k, &prev)
	}
	return prev, err
}

// Settled reports the session's record when it already has the write's
// statement or a later one (the write is a retry, or its number is
// stale); nil otherwise, and for a transaction that runs no retryable
// write.
func (t *Txn) Settled(ctx context.Context) (*Record, error) {
	if t.write == nil {
		return nil, nil
	}
	// On the monitor pool, as catalogPool: the transaction may hold the
	// last backend of its tier's pool, and DDL asks while it does.
	r, err := loadRecord(ctx, t.s.current(ctx).nodes[0].probe, t.write.k)
	if err != nil || r == nil || r.TxnNumber < t.write.n {
		return nil, err
	}
	return r, nil
}

// errSettled stops DDL in the transaction of a write that ran before.
var errSettled error = newErr(ErrInternal, "the session has already run this write")

// LoadRecord reads session k's record, on a backend of tier t on the
// primary; nil when it has none.
func (s *Store) LoadRecord(ctx context.Context, t qos.Tier, k SessionKey) (*Record, error) {
	return loadRecord(ctx, s.current(ctx).nodes[0].pools[t], k)
}

// loadRecord is LoadRecord on q.
func loadRecord(ctx context.Context, q querier, k SessionKey) (*Record, error) {
	var r Record
	err := q.QueryRow(ctx,
		`SELECT txn_number, reply FROM `+catalogSchema+`.txn_records WHERE lsid = $1 AND uid = $2`, k.LSID, k.User).Scan(&r.TxnNumber, &r.Reply)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return nil, fromPG(ctx, err)
	}
	return &r, nil
}

// TouchRecords marks sessions as used now (refreshSessions), so their
// records outlive the idle timeout.
func (s *Store) TouchRecords(ctx context.Context, keys []SessionKey) error {
	if len(keys) == 0 {
		return nil
	}
	lsids, users := keyColumns(keys)
	_, err := s.current(ctx).nodes[0].probe.Exec(ctx, `UPDATE `+catalogSchema+`.txn_records r SET last_use = now()
FROM unnest($1::bytea[], $2::text[]) AS k(lsid, uid) WHERE r.lsid = k.lsid AND r.uid = k.uid`, lsids, users)
	return fromPG(ctx, err)
}

// DeleteRecords forgets sessions that ended (endSessions, killSessions).
func (s *Store) DeleteRecords(ctx context.Context, keys []SessionKey) error {
	if len(keys) == 0 {
		return nil
	}
	lsids, users := keyColumns(keys)
	_, err := s.current(ctx).nodes[0].probe.Exec(ctx, `DELETE FROM `+catalogSchema+`.txn_records r
USING unnest($1::bytea[], $2::text[]) AS k(lsid, uid) WHERE r.lsid = k.lsid AND r.uid = k.uid`, lsids, users)
	return fromPG(ctx, err)
}

// keyColumns splits keys into the two arrays unnest takes.
func keyColumns(keys []SessionKey) (lsids [][]byte, users []string) {
	lsids, users = make([][]byte, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		lsids[i], users[i] = k.LSID, k.User
	}
	return lsids, users
}

// ReapRecords deletes the records of sessions idle for longer than idle
// (logicalSessionTimeoutMinutes): their statements can no longer be
// retried, as in MongoDB. It returns how many it deleted.
func (s *Store) ReapRecords(ctx context.Context, idle time.Duration) (int64, error) {
	tag, err := s.current(ctx).nodes[0].probe.Exec(ctx,
		`DELETE FROM `+catalogSchema+`.txn_records WHERE last_use < now() - make_interval(secs => $1)`, idle.Seconds())
	if err != nil {
		return 0, fromPG(ctx, err)
	}
	return tag.RowsAffected(), nil
}
