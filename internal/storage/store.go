package storage

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tierdb/internal/qos"
)

// Options configure a Store.
type Options struct {
	// ConnString is a pgx connection string for the database that holds tierdb's data.
	ConnString string
	// BackendsPerTier bounds each tier's pool of PostgreSQL backends (default 8).
	BackendsPerTier [qos.NumTiers]int
	Logger          *slog.Logger
	// OnBackendOpen and OnBackendClose, when set, hear about every backend a
	// tier's pool opens and closes, so its OS scheduling can be set once.
	OnBackendOpen  func(pid int, t qos.Tier)
	OnBackendClose func(pid int)
	// VersionCacheBytes bounds the cache of last-written document versions
	// that lets updates by _id skip their read (see versions.go); 0 turns it
	// off.
	VersionCacheBytes int
}

// Store is the document store on PostgreSQL.
type Store struct {
	log   *slog.Logger
	pools [qos.NumTiers]*pgxpool.Pool

	mu       sync.Mutex
	backends map[uint32]qos.Tier // backend PID → tier of the pool that owns it

	cat      *catalog
	versions *versionCache
}

// Open connects the per-tier pools and makes sure the catalog exists.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{log: opts.Logger, backends: map[uint32]qos.Tier{}, versions: newVersionCache(opts.VersionCacheBytes)}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		cfg, err := pgxpool.ParseConfig(opts.ConnString)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("storage: bad connection string: %w", err)
		}
		n := opts.BackendsPerTier[t]
		if n <= 0 {
			n = 8
		}
		cfg.MaxConns = int32(n)
		cfg.MinConns = 0
		cfg.ConnConfig.RuntimeParams["application_name"] = "tierdb-" + t.String()
		tier := t
		cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
			s.mu.Lock()
			s.backends[c.PgConn().PID()] = tier
			s.mu.Unlock()
			if opts.OnBackendOpen != nil {
				opts.OnBackendOpen(int(c.PgConn().PID()), tier)
			}
			return nil
		}
		cfg.BeforeClose = func(c *pgx.Conn) {
			s.mu.Lock()
			delete(s.backends, c.PgConn().PID())
			s.mu.Unlock()
			if opts.OnBackendClose != nil {
				opts.OnBackendClose(int(c.PgConn().PID()))
			}
		}
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			s.Close()
			return nil, fromPG(ctx, err)
		}
		s.pools[t] = p
	}
	s.cat = newCatalog(s)
	if err := s.cat.bootstrap(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes every pool.
func (s *Store) Close() {
	for _, p := range s.pools {
		if p != nil {
			p.Close()
		}
	}
}

// pool returns the pool of the tier the request runs at.
func (s *Store) pool(ctx context.Context) *pgxpool.Pool {
	return s.pools[qos.TierFrom(ctx)]
}

// BackendPIDs returns the PIDs of the PostgreSQL backends currently owned by
// the pool of tier t.
func (s *Store) BackendPIDs(t qos.Tier) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for pid, tier := range s.backends {
		if tier == t {
			pids = append(pids, int(pid))
		}
	}
	return pids
}

// PoolStats reports, per tier, backends in use and total.
func (s *Store) PoolStats() [qos.NumTiers][2]int32 {
	var out [qos.NumTiers][2]int32
	for t, p := range s.pools {
		st := p.Stat()
		out[t] = [2]int32{st.AcquiredConns(), st.TotalConns()}
	}
	return out
}

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	return fromPG(ctx, s.pool(ctx).Ping(ctx))
}
