package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"tierdb/internal/qos"
)

// Options configure a Store.
type Options struct {
	// ConnString is a pgx connection string for the database that holds
	// tierdb's data on the primary.
	ConnString string
	// PrimaryName names the primary in status reports (default "primary").
	PrimaryName string
	// Standbys are hot standbys of the primary that reads may be routed to.
	Standbys []NodeConfig
	// BackendsPerTier bounds each tier's pool of PostgreSQL backends on
	// every node (default 8).
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

// NodeConfig names one PostgreSQL server and how to reach its database.
type NodeConfig struct {
	Name       string
	ConnString string
}

// Node is a PostgreSQL server the store reaches: the primary or a standby.
type Node struct {
	Name    string
	Primary bool
	pools   [qos.NumTiers]*pgxpool.Pool
	// probe is a small pool for monitoring and write-concern queries, which
	// must never queue behind a tier's requests.
	probe *pgxpool.Pool
}

// topology is the set of nodes; it is replaced whole at a failover.
type topology struct {
	nodes []*Node // primary first
	// changing is closed when a failover that is under way ends; until then
	// requests wait for the new primary instead of failing.
	changing chan struct{}
}

// Store is the document store on PostgreSQL.
type Store struct {
	log  *slog.Logger
	opts Options
	topo atomic.Pointer[topology]

	mu       sync.Mutex
	backends map[uint32]qos.Tier // backend PID → tier of the pool that owns it

	cat      *catalog
	versions *versionCache

	asyncCommits atomic.Int64 // see AsyncCommits
	// deferred, deferredRefused: see DeferredWrites.
	deferred, deferredRefused atomic.Int64
	// swapsLost, lockedWrites: see WriteConflicts.
	swapsLost, lockedWrites atomic.Int64
	hotDocs                 hotDocs       // see Hot
	appends                 appendSignals // see capped.go
	changesOn               atomic.Bool   // see changes.go
}

// Open connects the per-tier pools of every node and makes sure the catalog
// exists on the primary.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{log: opts.Logger, opts: opts, backends: map[uint32]qos.Tier{}, versions: newVersionCache(opts.VersionCacheBytes)}
	if opts.PrimaryName == "" {
		opts.PrimaryName = "primary"
	}
	nodes, err := s.openNodes(ctx, NodeConfig{Name: opts.PrimaryName, ConnString: opts.ConnString}, opts.Standbys)
	if err != nil {
		return nil, err
	}
	s.topo.Store(&topology{nodes: nodes})
	s.cat = newCatalog(s)
	if err := s.cat.bootstrap(ctx); err != nil {
		s.Close()
		return nil, err
	}
	// Writes mark what change streams need (replacements, transactions'
	// sessions) from the first one on, not from the command layer's first
	// check a few seconds later.
	if _, err := s.ChangeStreamsEnabled(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) openNodes(ctx context.Context, primary NodeConfig, standbys []NodeConfig) ([]*Node, error) {
	var nodes []*Node
	for i, cfg := range append([]NodeConfig{primary}, standbys...) {
		n, err := s.openNode(ctx, cfg, i == 0)
		if err != nil {
			closeNodes(nodes)
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func (s *Store) openNode(ctx context.Context, cfg NodeConfig, primary bool) (*Node, error) {
	n := &Node{Name: cfg.Name, Primary: primary}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		size := s.opts.BackendsPerTier[t]
		if size <= 0 {
			size = 8
		}
		p, err := s.newPool(ctx, cfg, size, "tierdb-"+t.String(), t, true)
		if err != nil {
			closeNodes([]*Node{n})
			return nil, err
		}
		n.pools[t] = p
	}
	p, err := s.newPool(ctx, cfg, 4, "tierdb-monitor", qos.High, false)
	if err != nil {
		closeNodes([]*Node{n})
		return nil, err
	}
	n.probe = p
	return n, nil
}

// newPool opens a pool to a node; tracked pools report their backends to
// the OS-priority hooks as serving tier t.
// cancelGrace is how long a canceled statement's backend has to answer
// the cancel request before its connection is closed.
const cancelGrace = 5 * time.Second

func (s *Store) newPool(ctx context.Context, cfg NodeConfig, size int, appName string, t qos.Tier, tracked bool) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.ConnString)
	if err != nil {
		return nil, fmt.Errorf("storage: bad connection string for %s: %w", cfg.Name, err)
	}
	pc.MaxConns = int32(size)
	pc.MinConns = 0
	if tracked && t == qos.High {
		// One high-tier backend is kept open, so that a time-sensitive
		// client's first request, or its first after half an hour
		// without one (pgxpool's idle limit), does not pay for a
		// backend's start (5–7 ms here, ten times an update).
		pc.MinConns = 1
	}
	pc.ConnConfig.RuntimeParams["application_name"] = appName
	// Commits wait for their WAL flush unless a write says otherwise
	// (j:false), whatever the server's or role's default (an external
	// PostgreSQL's may be off).
	pc.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	// Plain writes and a retryable write's implicit transaction (see
	// Txn.Commit) rely on READ COMMITTED, whatever the default: a retry
	// racing its first run must wait for it and then find its record.
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	// A request that ends (maxTimeMS, killOp, client gone) cancels its
	// statement in PostgreSQL: pgx's default only stops waiting for it,
	// and the backend would run it on, a write included, to completion.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	if tracked {
		pc.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
			s.mu.Lock()
			s.backends[c.PgConn().PID()] = t
			s.mu.Unlock()
			if s.opts.OnBackendOpen != nil {
				s.opts.OnBackendOpen(int(c.PgConn().PID()), t)
			}
			return nil
		}
		pc.BeforeClose = func(c *pgx.Conn) {
			s.mu.Lock()
			delete(s.backends, c.PgConn().PID())
			s.mu.Unlock()
			if s.opts.OnBackendClose != nil {
				s.opts.OnBackendClose(int(c.PgConn().PID()))
			}
		}
	}
	p, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	return p, nil
}

func closeNodes(nodes []*Node) {
	for _, n := range nodes {
		for _, p := range append(n.pools[:], n.probe) {
			if p != nil {
				p.Close()
			}
		}
	}
}

// Close closes every pool.
func (s *Store) Close() {
	if t := s.topo.Load(); t != nil {
		closeNodes(t.nodes)
	}
}

// current returns the topology, waiting (until ctx ends) while a failover
// is under way.
func (s *Store) current(ctx context.Context) *topology {
	t := s.topo.Load()
	if t.changing != nil {
		select {
		case <-t.changing:
		case <-ctx.Done():
		}
		t = s.topo.Load()
	}
	return t
}

// Nodes returns the nodes, primary first.
func (s *Store) Nodes() []*Node { return s.topo.Load().nodes }

// BeginFailover makes requests wait for the new topology that EndFailover
// installs. Requests already running continue on the old primary (and fail
// with ErrUnavailable if it stops under them).
func (s *Store) BeginFailover() error {
	old := s.topo.Load()
	if old.changing != nil {
		return newErr(ErrIllegal, "a failover is already under way")
	}
	s.topo.Store(&topology{nodes: old.nodes, changing: make(chan struct{})})
	return nil
}

// EndFailover connects to the nodes of the new topology (when primary is
// non-empty) and lets waiting requests continue there. With an empty
// primary the old topology stays (the failover did not happen).
func (s *Store) EndFailover(ctx context.Context, primary NodeConfig, standbys []NodeConfig) error {
	cur := s.topo.Load()
	if cur.changing == nil {
		return errors.New("storage: no failover under way")
	}
	defer close(cur.changing)
	if primary.ConnString == "" {
		s.topo.Store(&topology{nodes: cur.nodes})
		return nil
	}
	nodes, err := s.openNodes(ctx, primary, standbys)
	if err != nil {
		s.topo.Store(&topology{nodes: cur.nodes})
		return err
	}
	s.topo.Store(&topology{nodes: nodes})
	// Pools wait for their borrowed connections before closing.
	go closeNodes(cur.nodes)
	return nil
}

// BackendPIDs returns the PIDs of the PostgreSQL backends currently owned by
// the pools of tier t, on every node.
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

// MaxBackends is how many backends the tiers' pools on one node may open
// together: the most requests that can run in PostgreSQL at once.
func (s *Store) MaxBackends() int {
	n := 0
	for t := range s.opts.BackendsPerTier {
		if size := s.opts.BackendsPerTier[t]; size > 0 {
			n += size
		} else {
			n += 8
		}
	}
	return n
}

// PoolStats reports, per tier, the primary's backends in use and total.
func (s *Store) PoolStats() [qos.NumTiers][2]int32 {
	var out [qos.NumTiers][2]int32
	for t, p := range s.topo.Load().nodes[0].pools {
		st := p.Stat()
		out[t] = [2]int32{st.AcquiredConns(), st.TotalConns()}
	}
	return out
}

// Ping checks that the primary answers on a backend of tier t.
func (s *Store) Ping(ctx context.Context, t qos.Tier) error {
	return fromPG(ctx, s.pool(ctx, At(t)).Ping(ctx))
}
