package storage

import "context"

// LockHolders returns the backends on the primary that the backends
// waiting (PIDs) wait for: the holders of the heavyweight locks (row and
// table locks) they queue behind, from pg_blocking_pids, and, when one of
// them waits for the WAL write lock, the client backends writing or
// flushing WAL at that moment (the lock's holder is one of them; PostgreSQL
// does not name lightweight-lock holders). Priority inheritance (seed 002)
// raises their priority while the wait lasts.
func (s *Store) LockHolders(ctx context.Context, waiting []int) ([]int, error) {
	if len(waiting) == 0 {
		return nil, nil
	}
	pids := make([]int32, len(waiting))
	for i, p := range waiting {
		pids[i] = int32(p)
	}
	var holders []int32
	err := s.current(ctx).nodes[0].probe.QueryRow(ctx, `
SELECT coalesce(array_agg(DISTINCT h), '{}') FROM (
	SELECT unnest(pg_blocking_pids(pid)) AS h FROM pg_stat_activity
	WHERE pid = ANY($1) AND wait_event_type = 'Lock'
	UNION
	SELECT f.pid FROM pg_stat_activity f
	WHERE f.backend_type = 'client backend' AND f.wait_event_type = 'IO' AND f.wait_event IN ('WALWrite', 'WALSync')
	AND NOT f.pid = ANY($1)
	AND EXISTS (SELECT 1 FROM pg_stat_activity w WHERE w.pid = ANY($1) AND w.wait_event_type = 'LWLock' AND w.wait_event = 'WALWrite')
) x`, pids).Scan(&holders)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	out := make([]int, len(holders))
	for i, h := range holders {
		out[i] = int(h)
	}
	return out, nil
}
