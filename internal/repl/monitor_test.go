package repl

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"tierdb/internal/storage"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// reply is what fakeProber answers for one node.
type reply struct {
	pos storage.WALPosition
	err error
	rtt time.Duration // the clock advances by this much during the call
}

// fakeProber is a Prober with scripted positions.
type fakeProber struct {
	clock *fakeClock // nil: no clock to advance

	mu      sync.Mutex
	nodes   []*storage.Node
	replies map[*storage.Node]reply
	calls   map[*storage.Node]int
	flushes map[*storage.Node]int
}

func newFakeProber(clock *fakeClock, nodes ...*storage.Node) *fakeProber {
	return &fakeProber{clock: clock, nodes: nodes, replies: map[*storage.Node]reply{}, calls: map[*storage.Node]int{}, flushes: map[*storage.Node]int{}}
}

func (p *fakeProber) FlushWAL(_ context.Context, n *storage.Node) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushes[n]++
	return nil
}

func (p *fakeProber) flushesOf(n *storage.Node) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushes[n]
}

func (p *fakeProber) Nodes() []*storage.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*storage.Node(nil), p.nodes...)
}

func (p *fakeProber) Position(ctx context.Context, n *storage.Node) (storage.WALPosition, error) {
	p.mu.Lock()
	r := p.replies[n]
	p.calls[n]++
	p.mu.Unlock()
	if p.clock != nil {
		p.clock.Advance(r.rtt)
	}
	if err := ctx.Err(); err != nil {
		return storage.WALPosition{}, err
	}
	return r.pos, r.err
}

func (p *fakeProber) setNodes(nodes ...*storage.Node) {
	p.mu.Lock()
	p.nodes = nodes
	p.mu.Unlock()
}

// set scripts node n's answer: applied (and received a bit beyond it on a
// standby), with the given round trip.
func (p *fakeProber) set(n *storage.Node, applied uint64, rtt time.Duration) {
	pos := storage.WALPosition{InRecovery: !n.Primary, Applied: applied, Received: applied, Inserted: applied}
	if !n.Primary {
		pos.Received = applied + 7
	}
	p.mu.Lock()
	p.replies[n] = reply{pos: pos, rtt: rtt}
	p.mu.Unlock()
}

// setPos scripts node n's answer exactly.
func (p *fakeProber) setPos(n *storage.Node, pos storage.WALPosition) {
	p.mu.Lock()
	p.replies[n] = reply{pos: pos}
	p.mu.Unlock()
}

func (p *fakeProber) fail(n *storage.Node, err error) {
	p.mu.Lock()
	p.replies[n] = reply{err: err}
	p.mu.Unlock()
}

func (p *fakeProber) callsTo(n *storage.Node) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[n]
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type fixture struct {
	clock   *fakeClock
	prober  *fakeProber
	mon     *Monitor
	primary *storage.Node
	s1, s2  *storage.Node
}

// newFixture makes a monitor over a primary and two standbys with a fake
// clock.
func newFixture(t *testing.T, interval time.Duration) *fixture {
	t.Helper()
	f := &fixture{
		clock:   &fakeClock{t: base},
		primary: &storage.Node{Name: "p", Primary: true},
		s1:      &storage.Node{Name: "s1"},
		s2:      &storage.Node{Name: "s2"},
	}
	f.prober = newFakeProber(f.clock, f.primary, f.s1, f.s2)
	f.mon = New(Options{Store: f.prober, Logger: quietLogger(), Interval: interval, Now: f.clock.Now})
	return f
}

// allAt puts every node at lsn and polls once.
func (f *fixture) allAt(lsn uint64) {
	for _, n := range []*storage.Node{f.primary, f.s1, f.s2} {
		f.prober.set(n, lsn, 0)
	}
	f.poll()
}

// member returns the monitor's view of node n.
func (f *fixture) member(t *testing.T, n *storage.Node) Member {
	t.Helper()
	for _, m := range f.mon.Members() {
		if m.Node() == n {
			return m
		}
	}
	t.Fatalf("no member for node %s", n.Name)
	return Member{}
}

// poll runs Poll with the primary, which Poll asks first, then the standbys
// at once: only one node per round may have a round trip that moves the
// clock, or the clock's readings around the others' calls would depend on
// scheduling.
func (f *fixture) poll() { f.mon.Poll(context.Background(), true) }

// pollStandbys runs Poll without the primary.
func (f *fixture) pollStandbys() { f.mon.Poll(context.Background(), false) }

func (f *fixture) waiters() int {
	f.mon.mu.Lock()
	defer f.mon.mu.Unlock()
	return len(f.mon.waiters)
}

func TestMembersBeforePoll(t *testing.T) {
	f := newFixture(t, 0)
	ms := f.mon.Members()
	if len(ms) != 3 {
		t.Fatalf("%d members, want 3", len(ms))
	}
	for i, want := range []*storage.Node{f.primary, f.s1, f.s2} {
		m := ms[i]
		if m.Node() != want || m.Name != want.Name || m.Primary != want.Primary || m.Up {
			t.Errorf("member %d = %+v, want %s, not up", i, m, want.Name)
		}
	}
	if s := ms[0].Staleness(base); s != 0 {
		t.Errorf("primary staleness %v, want 0", s)
	}
	if s := ms[1].Staleness(base); s != Unbounded {
		t.Errorf("unpolled standby staleness %v, want Unbounded", s)
	}
}

func TestPollUpdatesMembers(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 1000, time.Millisecond)
	f.prober.set(f.s1, 1000, 0)
	f.prober.set(f.s2, 400, 0)
	f.poll()
	// The primary is asked at base and answers at base+1ms.
	p := f.member(t, f.primary)
	if !p.Up || p.Err != nil || p.Applied != 1000 || p.Received != 1000 || p.RTT != time.Millisecond || !p.LastPoll.Equal(at(1)) {
		t.Errorf("primary %+v; want up at 1000, RTT 1ms, last poll at +1ms", p)
	}
	if !p.FreshAsOf.Equal(base) {
		t.Errorf("primary fresh as of %v, want the time before asking, %v", p.FreshAsOf, base)
	}
	s1 := f.member(t, f.s1)
	if !s1.Up || s1.Err != nil || s1.Applied != 1000 || s1.Received != 1007 {
		t.Errorf("s1 %+v; want up, applied 1000, received 1007", s1)
	}
	// s1 has applied the sample's position: fresh as of the sample's time,
	// not as of its own answer (at +1ms).
	if !s1.FreshAsOf.Equal(base) {
		t.Errorf("s1 fresh as of %v, want %v", s1.FreshAsOf, base)
	}
	if got := s1.Staleness(at(10)); got != 10*time.Millisecond {
		t.Errorf("s1 staleness at +10ms = %v, want 10ms", got)
	}
	if got := s1.Staleness(base.Add(-time.Second)); got != 0 {
		t.Errorf("s1 staleness before its freshness = %v, want 0", got)
	}
	s2 := f.member(t, f.s2)
	if !s2.Up || s2.Applied != 400 || s2.Received != 407 {
		t.Errorf("s2 %+v; want up, applied 400", s2)
	}
	// s2 is behind every sample: freshness unknown.
	if !s2.FreshAsOf.IsZero() || s2.Staleness(at(3_600_000)) != Unbounded {
		t.Errorf("s2 fresh as of %v, staleness %v; want unknown", s2.FreshAsOf, s2.Staleness(base))
	}
	if got := p.Staleness(at(3_600_000)); got != 0 {
		t.Errorf("primary staleness %v, want 0", got)
	}

	// The standbys' round trips, without the primary.
	f.prober.set(f.s1, 1000, 2*time.Millisecond)
	f.prober.set(f.s2, 400, 0)
	f.pollStandbys()
	if s1 := f.member(t, f.s1); s1.RTT != 2*time.Millisecond || !s1.LastPoll.Equal(at(3)) {
		t.Errorf("s1 RTT %v, last poll %v; want 2ms, %v", s1.RTT, s1.LastPoll, at(3))
	}
	if s2 := f.member(t, f.s2); s2.RTT != 0 {
		t.Errorf("s2 RTT %v, want 0", s2.RTT)
	}
	if got := f.member(t, f.primary); !got.LastPoll.Equal(p.LastPoll) || got.RTT != p.RTT {
		t.Errorf("Poll without the primary changed it: %+v", got)
	}
}

func TestStalenessIsConservative(t *testing.T) {
	f := newFixture(t, 0)
	// Primary samples every 10ms with positions 100, 200, 300, 400; s1
	// replays 100 behind, s2 catches up only at the end.
	f.prober.set(f.s2, 0, 0)
	for i := 1; i <= 4; i++ {
		f.prober.set(f.primary, uint64(100*i), 0)
		f.prober.set(f.s1, uint64(100*(i-1)), 0)
		f.poll()
		f.clock.Advance(10 * time.Millisecond)
	}
	// Now base+40ms. The sample at base+20ms had position 300, which s1
	// has applied; the one at base+30ms had 400, which it has not.
	s1 := f.member(t, f.s1)
	if !s1.FreshAsOf.Equal(at(20)) {
		t.Fatalf("s1 fresh as of %v, want %v", s1.FreshAsOf, at(20))
	}
	if got := s1.Staleness(f.clock.Now()); got != 20*time.Millisecond {
		t.Errorf("s1 staleness %v, want 20ms", got)
	}
	if got := f.member(t, f.s2).Staleness(f.clock.Now()); got != Unbounded {
		t.Errorf("s2 staleness %v, want Unbounded", got)
	}

	// s2 jumps past every sample: fresh as of the newest sample (base+30ms),
	// never as of its own poll.
	f.prober.set(f.s2, 10_000, 5*time.Millisecond)
	f.pollStandbys()
	s2 := f.member(t, f.s2)
	if !s2.FreshAsOf.Equal(at(30)) {
		t.Fatalf("s2 fresh as of %v, want the newest sample's %v", s2.FreshAsOf, at(30))
	}
	if f.prober.callsTo(f.primary) != 4 {
		t.Errorf("Poll without the primary asked it: %d calls, want 4", f.prober.callsTo(f.primary))
	}
	// A standby that answers with an older position than before keeps its
	// better freshness.
	f.prober.set(f.s2, 150, 0)
	f.poll()
	if got := f.member(t, f.s2).FreshAsOf; !got.Equal(at(30)) {
		t.Errorf("s2 fresh as of %v after reporting an older position, want %v kept", got, at(30))
	}
}

func TestStalenessCountsCommitsNotYetFlushed(t *testing.T) {
	f := newFixture(t, 0)
	// j:false commits are acknowledged before their flush: the primary
	// has flushed to 100 but inserted (and acknowledged) up to 150.
	f.prober.setPos(f.primary, storage.WALPosition{Applied: 100, Received: 100, Inserted: 150})
	f.prober.set(f.s1, 100, 0)
	f.prober.set(f.s2, 150, 0)
	f.poll()
	f.clock.Advance(10 * time.Millisecond)
	if got := f.member(t, f.s1).Staleness(f.clock.Now()); got != Unbounded {
		t.Errorf("a standby short of an acknowledged commit has staleness %v, want Unbounded", got)
	}
	if got := f.member(t, f.s2).Staleness(f.clock.Now()); got != 10*time.Millisecond {
		t.Errorf("a standby past every acknowledged commit has staleness %v, want 10ms", got)
	}
}

func TestFailedPollKeepsFreshness(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 500, 0)
	f.prober.set(f.s1, 500, 0)
	f.prober.set(f.s2, 500, 0)
	f.poll()
	boom := errors.New("connection refused")
	f.prober.fail(f.s1, boom)
	f.prober.set(f.primary, 900, 0)
	f.prober.set(f.s2, 900, 0)
	for _, d := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, time.Second} {
		f.clock.Advance(d)
		f.poll()
		now := f.clock.Now()
		s1 := f.member(t, f.s1)
		if s1.Up || !errors.Is(s1.Err, boom) {
			t.Fatalf("s1 up %v, err %v; want down with %v", s1.Up, s1.Err, boom)
		}
		if !s1.FreshAsOf.Equal(base) || !s1.LastPoll.Equal(base) || s1.Applied != 500 {
			t.Errorf("s1 after a failed poll %+v; want freshness, last poll and position of its last answer", s1)
		}
		if got, want := s1.Staleness(now), now.Sub(base); got != want {
			t.Errorf("down s1 staleness at %v = %v, want %v (growing)", now, got, want)
		}
		// s2 keeps up with the primary, sampled just now.
		if got := f.member(t, f.s2).Staleness(now); got != 0 {
			t.Errorf("s2 staleness at %v = %v, want 0", now, got)
		}
	}
	lastSample := f.clock.Now()

	// The primary failing: down, but never stale, and no new sample.
	f.prober.fail(f.primary, boom)
	f.clock.Advance(time.Second)
	f.poll()
	p := f.member(t, f.primary)
	if p.Up || p.Staleness(f.clock.Now()) != 0 {
		t.Errorf("failed primary up %v, staleness %v; want down, 0", p.Up, p.Staleness(f.clock.Now()))
	}

	// s1 answers again and is fresh as of the newest sample it covers.
	f.prober.set(f.s1, 900, 0)
	f.poll()
	if s1 := f.member(t, f.s1); !s1.Up || s1.Err != nil || !s1.FreshAsOf.Equal(lastSample) {
		t.Errorf("s1 after recovering %+v; want up, fresh as of %v", s1, lastSample)
	}
}

// TestHistoryOverflowKeepsOldFreshness: a standby lagging further than the
// history reaches keeps its last known freshness rather than losing it or
// gaining any.
func TestHistoryOverflowKeepsOldFreshness(t *testing.T) {
	f := newFixture(t, 20*time.Second) // history of 60s/20s+1 = 4 samples
	f.prober.set(f.s1, 100, 0)
	f.prober.set(f.s2, 100, 0)
	for i := 1; i <= 6; i++ {
		f.prober.set(f.primary, uint64(100*i), 0)
		f.poll()
		f.clock.Advance(20 * time.Second)
	}
	s1 := f.member(t, f.s1)
	if !s1.FreshAsOf.Equal(base) {
		t.Fatalf("s1 fresh as of %v, want %v", s1.FreshAsOf, base)
	}
	if got := s1.Staleness(f.clock.Now()); got != 120*time.Second {
		t.Errorf("s1 staleness %v, want 2m0s", got)
	}
}

func TestFailoverForgetsOldNodes(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 10_000, 0)
	f.prober.set(f.s1, 10_000, 0)
	f.prober.set(f.s2, 10_000, 0)
	f.poll()
	f.clock.Advance(time.Second)

	// s1 is promoted; the store describes it with new nodes, and its WAL
	// positions are behind the old primary's.
	newPrimary := &storage.Node{Name: "s1", Primary: true}
	newStandby := &storage.Node{Name: "p"}
	f.prober.setNodes(newPrimary, newStandby)
	f.prober.set(newPrimary, 50, 0)
	f.prober.set(newStandby, 50, 0)
	f.poll()

	ms := f.mon.Members()
	if len(ms) != 2 || ms[0].Node() != newPrimary || ms[1].Node() != newStandby {
		t.Fatalf("members after failover %+v", ms)
	}
	f.mon.mu.Lock()
	n := len(f.mon.members)
	f.mon.mu.Unlock()
	if n != 2 {
		t.Errorf("%d members kept, want 2 (old nodes forgotten)", n)
	}
	// The history restarted with the new primary's positions.
	if got := ms[1].FreshAsOf; !got.Equal(at(1000)) {
		t.Errorf("new standby fresh as of %v, want %v", got, at(1000))
	}
	// Old standbys no longer count for write concerns.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.mon.AwaitApplied(ctx, 5000, 1); !errors.Is(err, ErrWaitEnded) {
		t.Errorf("AwaitApplied counted a forgotten standby: %v", err)
	}
}

func TestAwaitAppliedNoStandbysNeeded(t *testing.T) {
	f := newFixture(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // even with ctx over and nothing polled
	for _, n := range []int{0, -1} {
		if err := f.mon.AwaitApplied(ctx, 1<<60, n); err != nil {
			t.Errorf("AwaitApplied(standbys=%d) = %v, want nil", n, err)
		}
	}
	if f.waiters() != 0 {
		t.Errorf("%d waiters left", f.waiters())
	}
}

func TestAwaitAppliedAlreadyMet(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 300, 0)
	f.prober.set(f.s1, 300, 0)
	f.prober.set(f.s2, 200, 0)
	f.poll()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a met concern returns nil without waiting, even with ctx over
	for _, tt := range []struct {
		lsn uint64
		n   int
	}{{300, 1}, {200, 2}, {1, 2}} {
		if err := f.mon.AwaitApplied(ctx, tt.lsn, tt.n); err != nil {
			t.Errorf("AwaitApplied(%d, %d) = %v, want nil", tt.lsn, tt.n, err)
		}
	}
	// Not met: 2 standbys at 300, 1 at 301; the primary does not count.
	for _, tt := range []struct {
		lsn uint64
		n   int
	}{{300, 2}, {301, 1}, {1, 3}} {
		if err := f.mon.AwaitApplied(ctx, tt.lsn, tt.n); !errors.Is(err, ErrWaitEnded) {
			t.Errorf("AwaitApplied(%d, %d) = %v, want ErrWaitEnded", tt.lsn, tt.n, err)
		}
	}
	if f.waiters() != 0 {
		t.Errorf("%d waiters left", f.waiters())
	}
}

// await starts AwaitApplied in a goroutine, waits until it is registered,
// and returns its result channel.
func (f *fixture) await(t *testing.T, ctx context.Context, lsn uint64, n int) <-chan error {
	t.Helper()
	before := f.waiters()
	ch := make(chan error, 1)
	go func() { ch <- f.mon.AwaitApplied(ctx, lsn, n) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.waiters() == before {
		select {
		case err := <-ch:
			t.Fatalf("AwaitApplied(%d, %d) returned %v without waiting", lsn, n, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("AwaitApplied did not register a waiter")
		}
		time.Sleep(100 * time.Microsecond)
	}
	return ch
}

// expectPending checks that the wait behind ch is still registered (Poll
// releases waiters before returning, so the count is exact) and has not
// returned.
func (f *fixture) expectPending(t *testing.T, ch <-chan error, what string, waiters int) {
	t.Helper()
	if n := f.waiters(); n != waiters {
		t.Fatalf("%s: %d waiters, want %d", what, n, waiters)
	}
	select {
	case err := <-ch:
		t.Fatalf("%s returned %v while still waiting", what, err)
	default:
	}
}

func expectResult(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

func TestAwaitAppliedReleasedByPoll(t *testing.T) {
	f := newFixture(t, 0)
	f.allAt(100)
	ctx := context.Background()

	one := f.await(t, ctx, 200, 1)
	two := f.await(t, ctx, 200, 2)
	far := f.await(t, ctx, 500, 1)

	// The primary reaching 200 does not count.
	f.prober.set(f.primary, 600, 0)
	f.poll()
	f.expectPending(t, one, "AwaitApplied(200, 1)", 3)

	// s1 reaches 250: releases the one-standby wait only.
	f.prober.set(f.s1, 250, 0)
	f.poll()
	if err := expectResult(t, one, "AwaitApplied(200, 1)"); err != nil {
		t.Fatalf("AwaitApplied(200, 1) = %v", err)
	}
	f.expectPending(t, two, "AwaitApplied(200, 2)", 2)
	f.expectPending(t, far, "AwaitApplied(500, 1)", 2)

	// s2 reaches exactly 200, but s1 went down: still one.
	f.prober.fail(f.s1, errors.New("down"))
	f.prober.set(f.s2, 200, 0)
	f.poll()
	f.expectPending(t, two, "AwaitApplied(200, 2)", 2)

	f.prober.set(f.s1, 500, 0)
	f.poll()
	if err := expectResult(t, two, "AwaitApplied(200, 2)"); err != nil {
		t.Fatalf("AwaitApplied(200, 2) = %v", err)
	}
	if err := expectResult(t, far, "AwaitApplied(500, 1)"); err != nil {
		t.Fatalf("AwaitApplied(500, 1) = %v", err)
	}
	if n := f.waiters(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

// A standby that waits for WAL short of a waiting write's target (it stopped
// before a split record, or applied all the primary sent) makes the monitor
// ask the primary to flush, once the write has waited flushAfter, and not
// more often than that.
func TestStuckStandbyMakesThePrimaryFlush(t *testing.T) {
	f := newFixture(t, 0)
	f.allAt(100)
	ctx := context.Background()
	w := f.await(t, ctx, 200, 1)

	// s1 has everything up to 200 but applied only 190.
	f.prober.setPos(f.s1, storage.WALPosition{InRecovery: true, Applied: 190, Received: 200})
	f.poll()
	if n := f.prober.flushesOf(f.primary); n != 0 {
		t.Fatalf("flushed %d times before the write waited %v", n, flushAfter)
	}
	f.clock.Advance(flushAfter)
	f.poll()
	f.poll() // a second round in the same instant asks nothing more
	if n := f.prober.flushesOf(f.primary); n != 1 {
		t.Fatalf("primary asked to flush %d times, want 1", n)
	}
	// A standby that has not received the target (replication lag, not a
	// split record) is no reason to flush.
	f.prober.set(f.s1, 150, 0)
	f.clock.Advance(10 * flushAfter)
	f.poll()
	if n := f.prober.flushesOf(f.primary); n != 1 {
		t.Fatalf("primary asked to flush %d times for a lagging standby, want 1", n)
	}
	// A standby that applied all it received is waiting for the primary,
	// which has not flushed the rest: flush.
	f.prober.setPos(f.s1, storage.WALPosition{InRecovery: true, Applied: 180, Received: 180})
	f.poll()
	if n := f.prober.flushesOf(f.primary); n != 2 {
		t.Fatalf("primary asked to flush %d times for an idle standby, want 2", n)
	}
	f.prober.set(f.s1, 220, 0)
	f.poll()
	if err := expectResult(t, w, "AwaitApplied(200, 1)"); err != nil {
		t.Fatal(err)
	}
	if n := f.prober.flushesOf(f.s1) + f.prober.flushesOf(f.s2); n != 0 {
		t.Fatalf("standbys asked to flush %d times", n)
	}
}

func TestAwaitAppliedContextEnds(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		cancel  bool
		wantErr error
	}{
		{name: "deadline", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, wantErr: context.DeadlineExceeded},
		{name: "cancel", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, cancel: true, wantErr: context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 0)
			f.prober.set(f.primary, 100, 0)
			f.prober.set(f.s1, 100, 0)
			f.prober.set(f.s2, 100, 0)
			f.poll()
			keep := f.await(t, context.Background(), 300, 1)
			ctx, cancel := tt.ctx()
			defer cancel()
			var err error
			if tt.cancel {
				ch := f.await(t, ctx, 200, 1)
				cancel()
				err = expectResult(t, ch, "AwaitApplied")
			} else {
				err = f.mon.AwaitApplied(ctx, 200, 1)
			}
			if !errors.Is(err, ErrWaitEnded) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("AwaitApplied = %v, want ErrWaitEnded and %v", err, tt.wantErr)
			}
			// Only the ended waiter is gone.
			if n := f.waiters(); n != 1 {
				t.Fatalf("%d waiters after the wait ended, want 1", n)
			}
			f.prober.set(f.s1, 300, 0)
			f.poll()
			if err := expectResult(t, keep, "the other AwaitApplied"); err != nil {
				t.Fatalf("the other AwaitApplied = %v", err)
			}
			if n := f.waiters(); n != 0 {
				t.Fatalf("%d waiters left", n)
			}
		})
	}
}

func TestAwaitAppliedWakesPollers(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 100, 0)
	f.prober.set(f.s1, 100, 0)
	f.prober.set(f.s2, 100, 0)
	f.poll()
	f.mon.mu.Lock()
	wake := f.mon.wake
	f.mon.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.await(t, ctx, 200, 1)
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitApplied did not signal the pollers")
	}
	// A met concern signals nothing.
	f.mon.mu.Lock()
	wake = f.mon.wake
	f.mon.mu.Unlock()
	if err := f.mon.AwaitApplied(ctx, 100, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("a met concern woke the pollers")
	default:
	}
}

func TestRunExitsOnCancelledContext(t *testing.T) {
	p := newFakeProber(nil, &storage.Node{Name: "p", Primary: true}, &storage.Node{Name: "s"})
	m := New(Options{Store: p, Logger: quietLogger(), Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with a cancelled context")
	}
}

// TestRun runs the poller for real: it polls every interval, a write
// concern wait is answered without waiting for the (long) ticker, and
// cancelling ends it.
func TestRun(t *testing.T) {
	primary, s1 := &storage.Node{Name: "p", Primary: true}, &storage.Node{Name: "s1"}
	p := newFakeProber(nil, primary, s1)
	p.set(primary, 100, 0)
	p.set(s1, 100, 0)

	t.Run("ticks", func(t *testing.T) {
		m := New(Options{Store: p, Logger: quietLogger(), Interval: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		start := p.callsTo(primary)
		deadline := time.Now().Add(10 * time.Second)
		for p.callsTo(primary) < start+5 {
			if time.Now().After(deadline) {
				t.Fatal("Run polled the primary fewer than 5 times in 10s at a 1ms interval")
			}
			time.Sleep(time.Millisecond)
		}
		if mem := m.Members(); !mem[1].Up || mem[1].Applied != 100 || mem[1].Staleness(time.Now()) == Unbounded {
			t.Errorf("standby after polls %+v", mem[1])
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	})

	t.Run("write concern wakes it", func(t *testing.T) {
		m := New(Options{Store: p, Logger: quietLogger(), Interval: time.Hour})
		startRun(t, m)
		// Wait for Run's first poll.
		deadline := time.Now().Add(10 * time.Second)
		for !m.Members()[1].Up {
			if time.Now().After(deadline) {
				t.Fatal("Run did not poll at start")
			}
			time.Sleep(time.Millisecond)
		}
		p.set(s1, 200, 0)
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := m.AwaitApplied(wctx, 200, 1); err != nil {
			t.Fatalf("AwaitApplied with Run polling = %v", err)
		}
	})
}

// startRun runs m until the test ends.
func startRun(t *testing.T, m *Monitor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// eventually polls cond until it holds, failing after a generous timeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunFollowsFailover: Run polls the nodes of a new topology and forgets
// the old ones.
func TestRunFollowsFailover(t *testing.T) {
	oldPrimary, oldStandby := &storage.Node{Name: "p"}, &storage.Node{Name: "s1"}
	oldPrimary.Primary = true
	p := newFakeProber(nil, oldPrimary, oldStandby)
	p.set(oldPrimary, 1000, 0)
	p.set(oldStandby, 1000, 0)
	m := New(Options{Store: p, Logger: quietLogger(), Interval: time.Millisecond})
	startRun(t, m)
	eventually(t, "the old standby is up", func() bool { return m.Members()[1].Up })

	newPrimary, newStandby := &storage.Node{Name: "s1", Primary: true}, &storage.Node{Name: "p"}
	p.set(newPrimary, 2000, 0)
	p.set(newStandby, 2000, 0)
	p.setNodes(newPrimary, newStandby)
	eventually(t, "the new nodes are polled", func() bool {
		ms := m.Members()
		return ms[0].Node() == newPrimary && ms[0].Up && ms[1].Node() == newStandby && ms[1].Up &&
			ms[1].Staleness(time.Now()) != Unbounded
	})
	eventually(t, "the old nodes are forgotten", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.members[oldPrimary] == nil && m.members[oldStandby] == nil
	})
}

// TestReplacedStandbysDoNotCountForWrites: after a failover the store
// describes the set with new nodes; the old nodes' last positions, from
// before the failover (possibly from the old primary's timeline), must not
// satisfy a write concern on the new primary.
//
// This fails: AwaitApplied counts every member the monitor still holds,
// and members of replaced nodes are dropped only by the next Poll, or by
// Run's topology tick (every 100ms), whose node loops may also re-create
// them while a poll of an old node is in flight.
func TestReplacedStandbysDoNotCountForWrites(t *testing.T) {
	f := newFixture(t, 0)
	f.prober.set(f.primary, 5000, 0)
	f.prober.set(f.s1, 5000, 0)
	f.prober.set(f.s2, 5000, 0)
	f.poll()

	newPrimary := &storage.Node{Name: "s1", Primary: true}
	newStandby := &storage.Node{Name: "s2"}
	f.prober.set(newPrimary, 4000, 0)
	f.prober.set(newStandby, 3000, 0)
	f.prober.setNodes(newPrimary, newStandby)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	// A write at 4500 on the new primary; no standby of the new topology
	// has applied it.
	if err := f.mon.AwaitApplied(ctx, 4500, 1); !errors.Is(err, ErrWaitEnded) {
		t.Fatalf("AwaitApplied = %v, want ErrWaitEnded: a replaced standby's old position counted", err)
	}
}

// TestLonePrimaryIsPolledSlowly: without standbys the primary's position
// dates nothing, so Run polls it every aloneInterval rather than every
// Interval; once a standby appears, the primary is polled at Interval
// again (within aloneInterval).
func TestLonePrimaryIsPolledSlowly(t *testing.T) {
	primary, s1 := &storage.Node{Name: "p", Primary: true}, &storage.Node{Name: "s1"}
	p := newFakeProber(nil, primary)
	p.set(primary, 100, 0)
	p.set(s1, 100, 0)
	m := New(Options{Store: p, Logger: quietLogger(), Interval: time.Millisecond})
	startRun(t, m)
	eventually(t, "the first poll", func() bool { return p.callsTo(primary) >= 1 })
	time.Sleep(300 * time.Millisecond) // 300 polls at Interval
	if n := p.callsTo(primary); n > 2 {
		t.Errorf("a lone primary was polled %d times in 300ms", n)
	}
	p.setNodes(primary, s1)
	eventually(t, "the standby to be polled", func() bool { return p.callsTo(s1) >= 1 })
	start := p.callsTo(primary)
	eventually(t, "the primary to be polled at Interval again", func() bool { return p.callsTo(primary) >= start+20 })
}
