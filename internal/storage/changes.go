package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tierdb/internal/changes"
	"tierdb/internal/qos"
)

// Change streams read one logical replication slot (package changes).
const (
	changesSlot        = "tierdb_changes"
	changesPublication = "tierdb_changes"
)

// The tables of dropped collections, while change streams may still decode
// their rows: the catalog forgets a table at its drop, but the changes
// before the drop are decoded later and must still name their collection.
// A row is written after the table is dropped, so its lsn follows every
// change of the table; once the slot has passed it, it is deleted.
const droppedTablesSQL = `;
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.dropped_tables (
	tbl  text PRIMARY KEY,
	db   text NOT NULL,
	name text NOT NULL,
	lsn  pg_lsn NOT NULL DEFAULT pg_current_wal_insert_lsn()
)`

// rememberDroppedSQL keeps a dropped table's namespace, when the change
// streams' slot exists.
const rememberDroppedSQL = `INSERT INTO ` + catalogSchema + `.dropped_tables (tbl, db, name)
SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '` + changesSlot + `')
ON CONFLICT DO NOTHING`

// ErrNoLogicalDecoding: PostgreSQL's wal_level is not logical, so change
// streams cannot be served.
var ErrNoLogicalDecoding = newErr(ErrIllegal, "change streams need PostgreSQL's wal_level = logical")

// ChangeSlot reads the change streams' slot. Every query runs on the
// primary's low-tier backends.
type ChangeSlot struct{ s *Store }

// EnableChangeStreams makes what change streams read, once per cluster:
// the publication of the catalog and every collection table, REPLICA
// IDENTITY FULL on them (so updates and deletes carry the old document:
// updateDescription, documentKey, fullDocumentBeforeChange; it makes their
// WAL records larger, which is why nothing of it exists until the first
// change stream), and the slot. Collections created later get the same
// replica identity (see createCollection).
func (s *Store) EnableChangeStreams(ctx context.Context) (*ChangeSlot, error) {
	low := At(qos.Low)
	var level string
	if err := s.pool(ctx, low).QueryRow(ctx, `SHOW wal_level`).Scan(&level); err != nil {
		return nil, fromPG(ctx, err)
	}
	if level != "logical" {
		return nil, ErrNoLogicalDecoding
	}
	err := s.cat.ddl(ctx, low, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)`, changesPublication).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE PUBLICATION `+changesPublication+` FOR TABLE `+catalogSchema+`.collections, TABLES IN SCHEMA `+dataSchema); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN `+catalogSchema+`.collections k ON k.tbl = c.relname AND n.nspname = '`+dataSchema+`'
WHERE c.relkind = 'r' AND c.relreplident <> 'f'
UNION ALL
SELECT '`+catalogSchema+`', 'collections' FROM pg_class c
WHERE c.oid = '`+catalogSchema+`.collections'::regclass AND c.relreplident <> 'f'`)
		if err != nil {
			return err
		}
		tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var ns, name string
			err := r.Scan(&ns, &name)
			return ns + "." + quoteIdent(name), err
		})
		if err != nil {
			return err
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+t+` REPLICA IDENTITY FULL`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A slot cannot be created in a transaction that has written.
	var exists bool
	p := s.pool(ctx, low)
	if err := p.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND wal_status IS DISTINCT FROM 'lost')`, changesSlot).Scan(&exists); err != nil {
		return nil, fromPG(ctx, err)
	}
	if !exists {
		// An invalidated slot (past max_slot_wal_keep_size) is replaced:
		// its history is lost.
		if _, err := p.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, changesSlot); err != nil {
			return nil, fromPG(ctx, err)
		}
		if _, err := p.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, changesSlot); err != nil {
			return nil, fromPG(ctx, err)
		}
	}
	s.changesOn.Store(true)
	return &ChangeSlot{s: s}, nil
}

// replicaIdentitySQL makes a new collection table carry old rows in the
// WAL when change streams are enabled (their publication exists).
func replicaIdentitySQL(table string) string {
	return `DO $d$ BEGIN
	IF EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '` + changesPublication + `') THEN
		ALTER TABLE ` + table + ` REPLICA IDENTITY FULL;
	END IF;
END $d$`
}

var _ changes.Slot = (*ChangeSlot)(nil)

// low is where the slot's queries run: the primary's low-tier backends.
func (c *ChangeSlot) low(ctx context.Context) querier {
	return c.s.pool(ctx, At(qos.Low))
}

// Peek implements changes.Slot.
func (c *ChangeSlot) Peek(ctx context.Context, n int, fn func(data []byte) bool) error {
	q := c.low(ctx)
	rows, err := q.Query(ctx, `SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, $2,
		'proto_version', '1', 'publication_names', $3, 'binary', 'true', 'messages', 'true')`, changesSlot, n, changesPublication)
	if err != nil {
		return slotError(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return slotError(ctx, err)
		}
		if !fn(data) {
			return nil
		}
	}
	return slotError(ctx, rows.Err())
}

// slotError is fromPG, with a missing slot (undefined_object) or one
// invalidated past max_slot_wal_keep_size (object_not_in_prerequisite_state)
// reported as changes.ErrSlotLost.
func slotError(ctx context.Context, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42704" || pe.Code == "55000") {
		return fmt.Errorf("%w: %s", changes.ErrSlotLost, pe.Message)
	}
	if errors.As(err, &pe) && pe.Code == "55006" { // object_in_use
		return fmt.Errorf("%w: %s", changes.ErrSlotBusy, pe.Message)
	}
	return fromPG(ctx, err)
}

// Advance implements changes.Slot.
func (c *ChangeSlot) Advance(ctx context.Context, lsn uint64) error {
	q := c.low(ctx)
	pos := pglogrepl.LSN(lsn).String()
	if _, err := q.Exec(ctx, `SELECT pg_replication_slot_advance($1, $2::pg_lsn)`, changesSlot, pos); err != nil {
		return slotError(ctx, err)
	}
	_, err := q.Exec(ctx, `DELETE FROM `+catalogSchema+`.dropped_tables WHERE lsn < $1::pg_lsn`, pos)
	return fromPG(ctx, err)
}

// Confirmed implements changes.Slot.
func (c *ChangeSlot) Confirmed(ctx context.Context) (uint64, error) {
	return c.lsn(ctx, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, changesSlot)
}

// Current implements changes.Slot.
func (c *ChangeSlot) Current(ctx context.Context) (uint64, error) {
	return c.lsn(ctx, `SELECT pg_current_wal_insert_lsn()::text`)
}

// Flushed implements changes.Slot.
func (c *ChangeSlot) Flushed(ctx context.Context) (uint64, error) {
	return c.lsn(ctx, `SELECT pg_current_wal_flush_lsn()::text`)
}

func (c *ChangeSlot) lsn(ctx context.Context, sql string, args ...any) (uint64, error) {
	q := c.low(ctx)
	var s string
	if err := q.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
		return 0, fromPG(ctx, err)
	}
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return 0, fmt.Errorf("storage: bad LSN %q: %w", s, err)
	}
	return uint64(l), nil
}

// Resolve implements changes.Slot.
func (c *ChangeSlot) Resolve(ctx context.Context, tbl string) (changes.Namespace, bool, error) {
	q := c.low(ctx)
	var ns changes.Namespace
	err := q.QueryRow(ctx, `SELECT db, name FROM `+catalogSchema+`.collections WHERE tbl = $1
UNION ALL SELECT db, name FROM `+catalogSchema+`.dropped_tables WHERE tbl = $1 LIMIT 1`, tbl).Scan(&ns.DB, &ns.Coll)
	if err == pgx.ErrNoRows {
		return ns, false, nil
	}
	if err != nil {
		return ns, false, fromPG(ctx, err)
	}
	return ns, true, nil
}

type replacingKey struct{}

// Replacing marks the document writes under ctx as replacements of whole
// documents (replaceOne, findOneAndReplace), for change streams.
func Replacing(ctx context.Context) context.Context {
	return context.WithValue(ctx, replacingKey{}, true)
}

// ChangeStreamsEnabled looks whether change streams have been enabled on
// the cluster (by any tierdb): their slot exists.
func (s *Store) ChangeStreamsEnabled(ctx context.Context) (bool, error) {
	var on bool
	err := s.pool(ctx, At(qos.Low)).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, changesSlot).Scan(&on)
	if err != nil {
		return false, fromPG(ctx, err)
	}
	s.changesOn.Store(on)
	return on, nil
}

// writeReplacement is write for a replacement while change streams are
// on: a transactional logical message naming the document's key goes
// first, in the same transaction, since WAL rows alone cannot tell a
// replacement (MongoDB's "replace" event) from an update.
func (s *Store) writeReplacement(ctx context.Context, on On, key []byte, sql string, args ...any) (pgconn.CommandTag, error) {
	const msg = `SELECT pg_logical_emit_message(true, '` + changes.ReplaceMessagePrefix + `', $1::bytea)`
	return s.writeAfter(ctx, on, &statement{sql: msg, args: []any{key}}, sql, args...)
}

// txnMessageSQL marks a MongoDB transaction's PostgreSQL transaction with
// its session (changes.TxnMessage), for its change events.
const txnMessageSQL = `SELECT pg_logical_emit_message(true, '` + changes.TxnMessagePrefix + `', $1::bytea)`

// dropDatabaseMessageSQL marks a dropDatabase in its transaction, after the
// drops of its collections, for change streams.
const dropDatabaseMessageSQL = `SELECT pg_logical_emit_message(true, '` + changes.DropDatabaseMessagePrefix + `', convert_to($1, 'UTF8'))`
