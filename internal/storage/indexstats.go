package storage

import (
	"context"
	"time"
)

// IndexUsage is how often an index was used, as PostgreSQL counts it.
type IndexUsage struct {
	// Ops is pg_stat_user_indexes.idx_scan of the index's btree (the
	// primary key for _id): scans started on it, on the primary.
	Ops int64
	// Since is when those counters started: the database's last stats
	// reset, or else the PostgreSQL server's start.
	Since time.Time
}

// IndexUsage reads the usage of each of c's indexes, by MongoDB index
// name, on the primary (at on's tier). PostgreSQL publishes a backend's counts when its
// transaction ends, at most about once a second, so a scan shows up a
// moment later.
func (s *Store) IndexUsage(ctx context.Context, on On, c *Collection) (map[string]IndexUsage, error) {
	names := make([]string, len(c.Indexes))
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		if ix.Column == "_id" {
			names[i] = c.tbl + "_pkey"
		} else {
			names[i] = pgIndexName(c, ix)
		}
	}
	var ops []int64
	var since time.Time
	err := s.q(ctx, on).QueryRow(ctx, `SELECT
	coalesce((SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()), pg_postmaster_start_time()),
	ARRAY(SELECT coalesce((SELECT idx_scan FROM pg_stat_user_indexes
		WHERE schemaname = $1 AND indexrelname = n), 0)::bigint FROM unnest($2::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i)`,
		dataSchema, names).Scan(&since, &ops)
	if err != nil {
		return nil, s.readError(ctx, on, c, err)
	}
	out := make(map[string]IndexUsage, len(c.Indexes))
	for i := range c.Indexes {
		out[c.Indexes[i].Name] = IndexUsage{Ops: ops[i], Since: since}
	}
	return out, nil
}
