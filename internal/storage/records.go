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

// claimSQL claims statement $3 of a session for the transaction it runs
// in; if the session already has that statement or a later one it fails
// with division_by_zero (see isClaimLost), which aborts the transaction
// and skips the statements pipelined behind it. A concurrent claim of the
// same session waits until the other transaction ends.
const claimSQL = `WITH c AS (
INSERT INTO ` + catalogSchema + `.txn_records AS r (lsid, uid, txn_number) VALUES ($1, $2, $3)
ON CONFLICT (lsid, uid) DO UPDATE SET txn_number = EXCLUDED.txn_number, reply = NULL, last_use = now()
WHERE r.txn_number < EXCLUDED.txn_number
RETURNING 1)
SELECT 1 / count(*) FROM c`

// errClaimLost is a transaction's claim of a statement the session has
// already run (or a later one).
var errClaimLost = newErr(ErrInternal, "the session has already run this statement")

// BeginRecorded begins a transaction (see Begin) that claims statement
// txnNumber of session k. Like BEGIN, the claim costs no round trip of its
// own: it rides in front of the transaction's first statement, which does
// not run if the claim fails. The caller must call Claim before it
// answers or writes anything outside the transaction.
//
// A MongoDB transaction (snapshot) begun while change streams are on also
// leaves its session's logical message (changes.TxnMessage) in its
// PostgreSQL transaction, right after the claim, before any of its
// writes, so that the change events of its writes carry lsid and
// txnNumber.
func (s *Store) BeginRecorded(ctx context.Context, t qos.Tier, snapshot bool, k SessionKey, txnNumber int64) (*Txn, error) {
	txn, err := s.Begin(ctx, t, snapshot)
	if err != nil {
		return nil, err
	}
	txn.key, txn.claim = k, len(txn.pending)
	txn.pending = append(txn.pending, Stmt{SQL: claimSQL, Args: []any{k.LSID, k.User, txnNumber}})
	if snapshot && s.changesOn.Load() {
		msg, err := changes.TxnMessage(k.LSID, k.User, txnNumber)
		if err != nil {
			txn.Rollback(ctx)
			return nil, err
		}
		txn.pending = append(txn.pending, Stmt{SQL: txnMessageSQL, Args: []any{msg}})
	}
	return txn, nil
}

// Claim settles the claim of a transaction from BeginRecorded, sending it
// now if no statement has carried it yet. If the session had already run
// the statement or a later one, the transaction is over (rolled back) and
// prev is the session's record: the caller answers a retry from it, or
// refuses a stale txnNumber.
func (t *Txn) Claim(ctx context.Context) (prev *Record, err error) {
	if t.claim < 0 {
		return nil, newErr(ErrInternal, "the transaction claims no statement")
	}
	if err := t.flush(ctx); err != nil && t.claimErr == nil {
		return nil, err
	}
	switch {
	case t.claimed:
		return nil, nil
	case t.claimErr == nil:
		return nil, newErr(ErrInternal, "the transaction failed before its claim")
	case t.claimErr != errClaimLost:
		return nil, t.claimErr
	}
	t.Rollback(ctx)
	prev, err = t.s.LoadRecord(ctx, t.tier, t.key)
	if err == nil && prev == nil {
		err = newErr(ErrInternal, "session record vanished")
	}
	return prev, err
}

// CommitRecorded stores reply as the outcome of the statement the
// transaction claimed and commits both, in one round trip (async: see
// Commit).
func (t *Txn) CommitRecorded(ctx context.Context, async bool, k SessionKey, reply []byte) error {
	_, err := t.Commit(ctx, async, Stmt{SQL: `UPDATE ` + catalogSchema + `.txn_records SET reply = $3, last_use = now() WHERE lsid = $1 AND uid = $2`,
		Args: []any{k.LSID, k.User, reply}})
	return err
}

// LoadRecord reads session k's record, on a backend of tier t on the
// primary; nil when it has none.
func (s *Store) LoadRecord(ctx context.Context, t qos.Tier, k SessionKey) (*Record, error) {
	var r Record
	err := s.current(ctx).nodes[0].pools[t].QueryRow(ctx,
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
