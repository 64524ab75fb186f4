package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WALPosition is where a node stands in the primary's write-ahead log, as
// byte positions (PostgreSQL LSNs as integers).
type WALPosition struct {
	// InRecovery is true on a standby.
	InRecovery bool
	// Applied is, on a primary, the end of the WAL written so far (every
	// acknowledged commit lies before it); on a standby, the end of the WAL
	// replayed, i.e. visible to reads.
	Applied uint64
	// Received is, on a standby, the end of the WAL received and flushed;
	// on a primary, Applied.
	Received uint64
}

const positionColumns = `pg_is_in_recovery(),
	CASE WHEN pg_is_in_recovery() THEN pg_wal_lsn_diff(COALESCE(pg_last_wal_replay_lsn(), '0/0'), '0/0')
	     ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') END::bigint,
	pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')::bigint`

// Position reads node n's WAL position over its monitoring pool, which no
// request ever waits behind.
func (s *Store) Position(ctx context.Context, n *Node) (WALPosition, error) {
	p, err := scanPosition(n.probe.QueryRow(ctx, `SELECT `+positionColumns))
	return p, fromPG(ctx, err)
}

// replayCheck is how often AwaitReplay looks at the replay position.
const replayCheck = 200 * time.Microsecond

// AwaitReplay waits on standby n, for at most about limit, until it has
// replayed the WAL up to target, and returns its position then. The waiting
// happens inside PostgreSQL (a check and a short sleep per row of a
// series), so tierdb spends one round trip on it rather than one per check.
func (s *Store) AwaitReplay(ctx context.Context, n *Node, target uint64, limit time.Duration) (WALPosition, error) {
	checks := max(int(limit/replayCheck), 1)
	lsn := fmt.Sprintf("%X/%X", target>>32, uint32(target))
	p, err := scanPosition(n.probe.QueryRow(ctx, `SELECT `+positionColumns+` FROM generate_series(1, $2::int)
		WHERE CASE WHEN COALESCE(pg_last_wal_replay_lsn(), '0/0') >= $1::pg_lsn THEN true
		           ELSE (SELECT false FROM pg_sleep($3::float8)) END
		LIMIT 1`, lsn, checks, replayCheck.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) { // not there yet
		return s.Position(ctx, n)
	}
	return p, fromPG(ctx, err)
}

func scanPosition(row pgx.Row) (WALPosition, error) {
	var p WALPosition
	var received *int64
	var applied int64
	if err := row.Scan(&p.InRecovery, &applied, &received); err != nil {
		return p, err
	}
	p.Applied = uint64(applied)
	p.Received = p.Applied
	if received != nil {
		p.Received = uint64(*received)
	}
	return p, nil
}
