package repl

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tierdb/internal/storage"
)

// Prober reads WAL positions; *storage.Store is one.
type Prober interface {
	Nodes() []*storage.Node
	Position(ctx context.Context, n *storage.Node) (storage.WALPosition, error)
	// FlushWAL makes the primary n flush all its WAL.
	FlushWAL(ctx context.Context, n *storage.Node) error
}

// Options configure a Monitor.
type Options struct {
	Store  Prober
	Logger *slog.Logger
	// Interval between polls of every node; default 20ms (the staleness
	// bound a client may ask for is only as fine as this).
	Interval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnRTT, when set, hears every poll's round trip (the read balancer
	// subtracts it from read latencies).
	OnRTT func(standby bool, rtt time.Duration)
}

// Member is what the monitor knows about one node.
type Member struct {
	Name    string
	Primary bool
	// Up is false when the last poll failed.
	Up       bool
	Applied  uint64
	Received uint64
	// FreshAsOf is the latest time as of which the node shows every
	// acknowledged write; zero when unknown.
	FreshAsOf time.Time
	// LastPoll is when the node last answered.
	LastPoll time.Time
	// RTT is the last poll's round trip.
	RTT time.Duration
	// Err is the last poll's error.
	Err error

	node *storage.Node
}

// Staleness is how old the node's view may be at now: at least the
// interval since it was last known to be fresh; unknown freshness counts as
// infinitely stale. The primary is never stale.
func (m Member) Staleness(now time.Time) time.Duration {
	if m.Primary {
		return 0
	}
	if m.FreshAsOf.IsZero() {
		return Unbounded
	}
	return max(now.Sub(m.FreshAsOf), 0)
}

// Unbounded is the staleness of a node whose freshness is unknown.
const Unbounded = time.Duration(1<<63 - 1)

// Monitor polls every node's WAL position and answers staleness and
// write-concern questions.
type Monitor struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	primary *history
	members map[*storage.Node]*Member
	waiters []*waiter
	// wake is closed (and replaced) when a write starts waiting, so that
	// every standby's loop polls at once.
	wake chan struct{}
	// flushedAt is when the monitor last asked the primary to flush.
	flushedAt time.Time
}

type waiter struct {
	lsn   uint64
	need  int // standbys that must have applied lsn
	since time.Time
	done  chan struct{}
}

// flushAfter is how long a standby may wait for WAL from the primary,
// short of a waiting write's target, before the monitor asks the primary to
// flush.
//
// Why it is needed: a write's target is the primary's WAL flush position,
// and that position can end inside a record of another transaction that
// the WAL writer has flushed only up to a page boundary. A standby cannot
// replay a record it has only part of, so it stops just before it, short
// of the target, until the rest is flushed: by the next commit, or by the
// WAL writer after up to two wal_writer_delay rounds (400 ms by default).
// With the lower tiers held back by the priority channel there may be no
// next commit, and a high-tier majority write would stall for that long.
const flushAfter = time.Millisecond

// aloneInterval is how often a primary without standbys is polled. Its
// WAL position only dates the standbys' positions, so with none there is
// nothing to date, only its being up to report; at Interval it would cost
// a PostgreSQL query and two wake-ups 50 times a second on every server
// that runs without replicas. A standby that appears is polled at once;
// until the primary's next poll, at most this long after, it counts as
// staler than it is, never fresher.
const aloneInterval = time.Second

// New makes a monitor; Run polls.
func New(opts Options) *Monitor {
	if opts.Interval <= 0 {
		opts.Interval = 20 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Enough history for a standby lagging by about a minute at the
	// slowest sampling rate; older lag reads as "unknown", i.e. stale.
	size := int(time.Minute/opts.Interval) + 1
	return &Monitor{opts: opts, log: opts.Logger, now: opts.Now, wake: make(chan struct{}),
		primary: newHistory(size), members: map[*storage.Node]*Member{}}
}

// Run polls until ctx ends: one loop per node, so that a node that hangs
// delays no news from the others. While writes wait for replication, the
// standbys still behind what they need are polled every 200µs, so a write
// concern is answered within about one poll of a standby applying the write.
func (m *Monitor) Run(ctx context.Context) {
	loops := map[*storage.Node]context.CancelFunc{}
	defer func() {
		for _, cancel := range loops {
			cancel()
		}
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		nodes := m.opts.Store.Nodes()
		for _, n := range nodes {
			if loops[n] == nil {
				nctx, cancel := context.WithCancel(ctx)
				loops[n] = cancel
				go m.runNode(nctx, n)
			}
		}
		for n, cancel := range loops {
			if !slices.Contains(nodes, n) {
				cancel()
				delete(loops, n)
			}
		}
		m.forget(nodes)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Monitor) runNode(ctx context.Context, n *storage.Node) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		m.pollNode(ctx, n)
		m.mu.Lock()
		m.releaseWaiters()
		flush := m.needsFlush(n)
		fast := m.behind(n)
		wake := m.wake
		tick := t.C
		if n.Primary {
			wake = nil // waiting writes need news of the standbys only
			if len(m.opts.Store.Nodes()) == 1 {
				tick = time.After(aloneInterval)
			}
		}
		m.mu.Unlock()
		if flush {
			m.flushPrimary(ctx)
			continue
		}
		if fast {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Microsecond):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-wake:
		}
	}
}

// Poll reads every node's position once, the primary's first (only when
// withPrimary), and updates freshness and waiting writes. Run does the
// same continuously; Poll is for one-off rounds.
func (m *Monitor) Poll(ctx context.Context, withPrimary bool) {
	nodes := m.opts.Store.Nodes()
	if len(nodes) == 0 {
		return
	}
	if withPrimary {
		m.pollNode(ctx, nodes[0])
	}
	var wg sync.WaitGroup
	for _, n := range nodes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.pollNode(ctx, n)
		}()
	}
	wg.Wait()
	m.forget(nodes)
	m.mu.Lock()
	m.releaseWaiters()
	flush := slices.ContainsFunc(nodes[1:], m.needsFlush)
	m.mu.Unlock()
	if flush {
		m.flushPrimary(ctx)
	}
}

// needsFlush says whether standby n, short of a write that has waited
// flushAfter, is waiting for WAL rather than replaying: it has received the
// target (and stopped before a split record) or applied all it received.
// Then, unless a flush was asked for within flushAfter, it records one as
// asked for and says yes. m.mu is held. See flushAfter.
func (m *Monitor) needsFlush(n *storage.Node) bool {
	mem := m.members[n]
	if n.Primary || len(m.waiters) == 0 || mem == nil || !mem.Up {
		return false
	}
	now := m.now()
	if now.Sub(m.flushedAt) < flushAfter {
		return false
	}
	for _, w := range m.waiters {
		idle := mem.Received >= w.lsn || mem.Received == mem.Applied
		if idle && mem.Applied < w.lsn && now.Sub(w.since) >= flushAfter {
			m.flushedAt = now
			return true
		}
	}
	return false
}

func (m *Monitor) flushPrimary(ctx context.Context) {
	nodes := m.opts.Store.Nodes()
	if len(nodes) == 0 || !nodes[0].Primary {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := m.opts.Store.FlushWAL(ctx, nodes[0]); err != nil {
		m.log.Debug("asking the primary to flush its WAL", "err", err)
	}
}

// forget drops the members a failover replaced.
func (m *Monitor) forget(nodes []*storage.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.members {
		if !slices.Contains(nodes, n) {
			delete(m.members, n)
		}
	}
}

func (m *Monitor) pollNode(ctx context.Context, n *storage.Node) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	sent := m.now()
	pos, err := m.opts.Store.Position(ctx, n)
	got := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.opts.Store.Nodes(), n) {
		return // replaced by a failover while we asked
	}
	mem := m.members[n]
	if mem == nil {
		mem = &Member{Name: n.Name, Primary: n.Primary, node: n}
		m.members[n] = mem
	}
	mem.Err = err
	mem.Up = err == nil
	if err != nil {
		return
	}
	mem.LastPoll, mem.RTT = got, got.Sub(sent)
	if m.opts.OnRTT != nil {
		m.opts.OnRTT(!n.Primary, mem.RTT)
	}
	mem.Applied, mem.Received = pos.Applied, pos.Received
	if n.Primary {
		// Everything acknowledged before sent lies before pos.Inserted
		// (not only before pos.Applied: j:false commits are acknowledged
		// before their flush). An insert position inside a record makes a
		// standby look staler than it is, never fresher.
		m.primary.add(sample{at: sent, lsn: pos.Inserted})
		mem.FreshAsOf = sent
		return
	}
	if fresh, ok := m.primary.freshAsOf(pos.Applied); ok && fresh.After(mem.FreshAsOf) {
		mem.FreshAsOf = fresh
	}
}

// behind says whether standby n has yet to apply what a waiting write
// needs, i.e. whether polling it can release anyone. m.mu is held.
func (m *Monitor) behind(n *storage.Node) bool {
	if n.Primary {
		return false
	}
	mem := m.members[n]
	if mem != nil && !mem.Up {
		return false // the regular polls notice when it is back
	}
	for _, w := range m.waiters {
		if mem == nil || mem.Applied < w.lsn {
			return true
		}
	}
	return false
}

// releaseWaiters wakes the writes whose concern is now met. m.mu is held.
func (m *Monitor) releaseWaiters() {
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if m.appliedBy(w.lsn) >= w.need {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

// appliedBy counts the standbys that have applied lsn. m.mu is held.
// Only standbys of the current topology count: right after a failover the
// members of the old one may linger until the next round.
func (m *Monitor) appliedBy(lsn uint64) int {
	nodes := m.opts.Store.Nodes()
	if len(nodes) < 2 {
		return 0
	}
	n := 0
	for _, node := range nodes[1:] {
		if mem := m.members[node]; mem != nil && mem.Up && mem.Applied >= lsn {
			n++
		}
	}
	return n
}

// ErrWaitEnded is returned by AwaitApplied when ctx ended first.
var ErrWaitEnded = errors.New("repl: write concern not satisfied in time")

// AwaitApplied waits until at least standbys standbys have applied the WAL
// up to lsn, or ctx ends (ErrWaitEnded wrapping ctx's error).
func (m *Monitor) AwaitApplied(ctx context.Context, lsn uint64, standbys int) error {
	if standbys <= 0 {
		return nil
	}
	m.mu.Lock()
	if m.appliedBy(lsn) >= standbys {
		m.mu.Unlock()
		return nil
	}
	w := &waiter{lsn: lsn, need: standbys, since: m.now(), done: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		m.mu.Lock()
		if i := slices.Index(m.waiters, w); i >= 0 {
			m.waiters = slices.Delete(m.waiters, i, i+1)
		}
		m.mu.Unlock()
		select {
		case <-w.done: // met as ctx ended: count it
			return nil
		default:
		}
		return errors.Join(ErrWaitEnded, ctx.Err())
	}
}

// Members describes every node, primary first, in the store's order.
func (m *Monitor) Members() []Member {
	nodes := m.opts.Store.Nodes()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(nodes))
	for _, n := range nodes {
		if mem := m.members[n]; mem != nil {
			out = append(out, *mem)
		} else {
			out = append(out, Member{Name: n.Name, Primary: n.Primary, node: n})
		}
	}
	return out
}

// Node is the storage node a member describes.
func (m Member) Node() *storage.Node { return m.node }
