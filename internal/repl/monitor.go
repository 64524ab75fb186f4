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
	wake chan struct{}

	mu      sync.Mutex
	primary *history
	members map[*storage.Node]*Member
	waiters []*waiter
}

type waiter struct {
	lsn  uint64
	need int // standbys that must have applied lsn
	done chan struct{}
}

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
	return &Monitor{opts: opts, log: opts.Logger, now: opts.Now, wake: make(chan struct{}, 1),
		primary: newHistory(size), members: map[*storage.Node]*Member{}}
}

// Run polls until ctx ends. While writes wait for replication it polls
// the standbys back to back, so a write concern is answered within about
// one round trip of the standby applying the write.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	lastPrimary := time.Time{}
	for {
		fast := m.waiting()
		if !fast || m.now().Sub(lastPrimary) >= m.opts.Interval {
			lastPrimary = m.now()
			m.Poll(ctx, true)
		} else {
			m.Poll(ctx, false)
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
		case <-t.C:
		case <-m.wake:
		}
	}
}

func (m *Monitor) waiting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters) > 0
}

// Poll reads every node's position once (the primary's only when
// withPrimary) and updates freshness and waiting writes.
func (m *Monitor) Poll(ctx context.Context, withPrimary bool) {
	nodes := m.opts.Store.Nodes()
	if len(nodes) == 0 {
		return
	}
	if withPrimary {
		m.pollNode(ctx, nodes[0])
	}
	for _, n := range nodes[1:] {
		m.pollNode(ctx, n)
	}
	m.mu.Lock()
	// Forget nodes a failover replaced.
	for n := range m.members {
		if !slices.Contains(nodes, n) {
			delete(m.members, n)
		}
	}
	m.releaseWaiters()
	m.mu.Unlock()
}

func (m *Monitor) pollNode(ctx context.Context, n *storage.Node) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	sent := m.now()
	pos, err := m.opts.Store.Position(ctx, n)
	got := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
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
	mem.Applied, mem.Received = pos.Applied, pos.Received
	if n.Primary {
		// Everything acknowledged before sent lies before pos.Applied.
		m.primary.add(sample{at: sent, lsn: pos.Applied})
		mem.FreshAsOf = sent
		return
	}
	if fresh, ok := m.primary.freshAsOf(pos.Applied); ok && fresh.After(mem.FreshAsOf) {
		mem.FreshAsOf = fresh
	}
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
func (m *Monitor) appliedBy(lsn uint64) int {
	n := 0
	for _, mem := range m.members {
		if !mem.Primary && mem.Up && mem.Applied >= lsn {
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
	w := &waiter{lsn: lsn, need: standbys, done: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
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
