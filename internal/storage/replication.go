package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// WALPosition is where a node stands in the primary's write-ahead log, as
// byte positions (PostgreSQL LSNs as integers).
type WALPosition struct {
	// InRecovery is true on a standby.
	InRecovery bool
	// Applied is, on a primary, the end of the WAL flushed so far (every
	// synchronously acknowledged commit lies before it, and nothing beyond
	// it has been sent to standbys yet); on a standby, the end of the WAL
	// replayed, i.e. visible to reads.
	Applied uint64
	// Received is, on a standby, the end of the WAL received and flushed;
	// on a primary, Applied.
	Received uint64
	// Inserted is, on a primary, the end of the WAL inserted so far: every
	// acknowledged commit lies before it, the j:false ones too, which are
	// acknowledged before their flush. On a standby, Applied.
	Inserted uint64
}

// Position reads node n's WAL position over its monitoring pool, which no
// request ever waits behind.
func (s *Store) Position(ctx context.Context, n *Node) (WALPosition, error) {
	var p WALPosition
	var received, inserted *int64
	var applied int64
	err := n.probe.QueryRow(ctx, `SELECT pg_is_in_recovery(),
		CASE WHEN pg_is_in_recovery() THEN pg_wal_lsn_diff(COALESCE(pg_last_wal_replay_lsn(), '0/0'), '0/0')
		     ELSE pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0') END::bigint,
		pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')::bigint,
		CASE WHEN NOT pg_is_in_recovery() THEN pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint END`).Scan(&p.InRecovery, &applied, &received, &inserted)
	if err != nil {
		return p, fromPG(ctx, err)
	}
	p.Applied = uint64(applied)
	p.Received, p.Inserted = p.Applied, p.Applied
	if received != nil {
		p.Received = uint64(*received)
	}
	if inserted != nil {
		p.Inserted = uint64(*inserted)
	}
	return p, nil
}

// HelperProcess is one of a node's own processes (not a client backend),
// as pg_stat_activity names it: "walwriter", "checkpointer", "startup"…
type HelperProcess struct {
	PID  int
	Kind string
}

// HelperProcesses lists the helper processes of every node. Their PIDs
// are the server host's: meaningful here only when PostgreSQL runs on
// this machine, which the caller must check before touching them.
func (s *Store) HelperProcesses(ctx context.Context) ([]HelperProcess, error) {
	var out []HelperProcess
	for _, n := range s.Nodes() {
		rows, err := n.probe.Query(ctx, `SELECT pid, backend_type FROM pg_stat_activity
			WHERE backend_type NOT IN ('client backend', 'parallel worker', 'background worker')`)
		if err != nil {
			return out, fromPG(ctx, err)
		}
		procs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HelperProcess, error) {
			var p HelperProcess
			err := r.Scan(&p.PID, &p.Kind)
			return p, err
		})
		if err != nil {
			return out, fromPG(ctx, err)
		}
		out = append(out, procs...)
	}
	return out, nil
}

// FlushWAL makes primary n write and flush all the WAL it has. It commits
// a transaction whose only WAL record is an empty logical-decoding message
// (which needs no table and no wal_level=logical): a synchronous commit
// that wrote WAL flushes every record inserted before it. The statement
// makes its own commit synchronous, whatever the server's default. A
// transaction with nothing but an xid would not do: PostgreSQL commits
// those asynchronously.
func (s *Store) FlushWAL(ctx context.Context, n *Node) error {
	_, err := n.probe.Exec(ctx, `SELECT set_config('synchronous_commit', 'on', true), pg_logical_emit_message(true, 'tierdb', '')`)
	return fromPG(ctx, err)
}
