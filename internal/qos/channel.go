package qos

import (
	"context"
	"sync"
	"time"

	"tierdb/internal/mongoerr"
)

// ChannelOptions configures a Channel.
type ChannelOptions struct {
	// Threshold is the paper's activation threshold (thr_lvl): lower tiers
	// are held back only while at least this many more important requests
	// are in process. A higher value keeps more parallelism at the cost of
	// less isolation for high-tier requests. Zero means 1, the paper's
	// default; a negative value is an error.
	Threshold int
	// StarvationGuard, when positive, lets a starving lower-tier request
	// through at least once per interval even while the channel holds its
	// tier back: the oldest blocked normal request first, else the oldest
	// blocked low one. A request is starving once it has waited a full
	// interval, and the guard grants at most one such pass per interval.
	// Zero (the default) turns it off, which is the paper's behaviour:
	// lower tiers may then wait for as long as higher-tier traffic lasts.
	StarvationGuard time.Duration
	// Anticipation, when positive, keeps the lower tiers held for this long
	// after the last high-tier request in process ends, as if the high
	// tier's next request were already in process; a high-tier request
	// arriving in that time ends the period. It keeps the gaps of a
	// back-to-back high-tier client from releasing bursts of lower-tier
	// work (see anticipationState). Zero (the default) is the paper's
	// channel exactly.
	Anticipation time.Duration
	// Clock defaults to RealClock().
	Clock Clock
}

// Channel is the priority channel ("Custom Semaphore") of the paper named in
// the package comment: the gate every user request passes before it touches
// storage, so that lower-tier requests are slowed down while enough
// higher-tier ones are being processed, instead of competing with them for
// the database.
//
// Entry follows Algorithm 2, exit Algorithm 3. Following the paper, a normal
// request counts as "in process" for the low tier from the moment it enters,
// even while it waits itself; low requests are never counted. Waiters of a
// tier are woken in arrival order, and each re-checks its condition before it
// runs.
//
// A Channel is safe for concurrent use. Its zero value is not usable; call
// NewChannel.
type Channel struct {
	clock Clock
	hooks *hooks // nil except in this package's tests

	mu           sync.Mutex
	threshold    int
	running      [NumTiers]int       // admitted and not yet done
	queues       [NumTiers]waitQueue // the High queue stays empty: high never waits
	tokens       tokenTable
	counters     [NumTiers]tierCounters
	guard        guardState
	anticipation anticipationState
	observed     bool // an OnHighActive observer is registered

	// obsMu serialises observer calls so that they reach the observer in
	// the order the state changed; see syncObserver.
	obsMu    sync.Mutex
	observer func(active bool)
	reported bool
}

// NewChannel returns a Channel with nothing in process.
func NewChannel(opts ChannelOptions) (*Channel, error) {
	thr := opts.Threshold
	if thr == 0 {
		thr = 1
	}
	if thr < 1 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "priority channel threshold must be at least 1, got %d", opts.Threshold)
	}
	if opts.Anticipation < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "anticipation must not be negative, got %v", opts.Anticipation)
	}
	if opts.StarvationGuard < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "starvation guard interval must not be negative, got %v", opts.StarvationGuard)
	}
	clock := opts.Clock
	if clock == nil {
		clock = RealClock()
	}
	return &Channel{
		clock:        clock,
		threshold:    thr,
		guard:        guardState{every: opts.StarvationGuard},
		anticipation: anticipationState{configured: opts.Anticipation},
	}, nil
}

// Admit blocks until a request of tier t may be processed (Algorithm 2): a
// high request never waits; a normal one waits while at least Threshold high
// requests are in process; a low one waits while high plus normal requests
// (waiting normals included) reach Threshold.
//
// Internal requests (health checks, replication monitoring, the tier-change
// command itself) bypass the channel entirely, as the paper requires: holding
// them back could stall the very mechanism that would release them.
//
// On success Admit returns the request's Entry, whose Done ends processing
// (Algorithm 3). If ctx ends while the request waits, Admit withdraws it
// completely (its counts are undone and anyone its departure unblocks is
// woken) and returns ctx.Err() with the zero Entry. A wake-up that races with
// cancellation is resolved in favour of the cancellation, so a request is
// either admitted or leaves no trace. An internal request gets the zero
// Entry, whose Done does nothing.
func (c *Channel) Admit(ctx context.Context, t Tier, internal bool) (Entry, error) {
	if internal {
		return Entry{}, nil
	}
	if t >= NumTiers {
		return Entry{}, mongoerr.Newf(mongoerr.BadValue, "unknown performance tier %d", uint8(t))
	}
	c.mu.Lock()
	if c.mayRunLocked(t) {
		slot, gen, notify := c.admitLocked(t, nil, false)
		c.mu.Unlock()
		if notify {
			c.syncObserver()
		}
		return Entry{c: c, slot: slot, gen: gen, tier: t}, nil
	}
	if err := ctx.Err(); err != nil {
		// Already abandoned: do not make others count a request that
		// will never run.
		c.counters[t].cancelled++
		c.mu.Unlock()
		return Entry{}, err
	}
	w := &waiter{tier: t, since: c.clock.Now(), wake: make(chan struct{}, 1)}
	c.queues[t].push(w)
	c.emit(evQueue, t, w, false)
	c.armGuardLocked()
	c.mu.Unlock()
	return c.wait(ctx, w)
}

// Enter counts a request of tier t as in process at once, whatever the
// channel's state, and returns its Entry (Done is Algorithm 3). It is for
// the later statements of a transaction admitted at its first: they may
// hold PostgreSQL locks that requests in process wait for, so holding them
// back could stall the very requests that hold their tier back.
func (c *Channel) Enter(t Tier) Entry {
	c.mu.Lock()
	slot, gen, notify := c.admitLocked(t, nil, false)
	c.mu.Unlock()
	if notify {
		c.syncObserver()
	}
	return Entry{c: c, slot: slot, gen: gen, tier: t}
}

// wait is the loop of Algorithm 2 lines 6-9 and 11-14. A signal only means
// "your condition may hold now": the waiter re-checks it under the lock,
// because another high request may have arrived between the signal and the
// re-check. If it must wait again it keeps its place in the queue.
func (c *Channel) wait(ctx context.Context, w *waiter) (Entry, error) {
	for {
		select {
		case <-w.wake:
		case <-ctx.Done():
		}
		if c.hooks != nil && c.hooks.beforeRecheck != nil {
			c.hooks.beforeRecheck(w)
		}
		c.mu.Lock()
		q := &c.queues[w.tier]
		if w.signalled {
			w.signalled = false
			q.unsignalled++
		}
		if err := ctx.Err(); err != nil {
			c.abandonLocked(w)
			c.mu.Unlock()
			return Entry{}, err
		}
		free := c.mayRunLocked(w.tier)
		if free || w.guardPass {
			q.remove(w)
			slot, gen, _ := c.admitLocked(w.tier, w, !free)
			c.mu.Unlock()
			return Entry{c: c, waited: w.waited, slot: slot, gen: gen, tier: w.tier}, nil
		}
		c.emit(evRewait, w.tier, w, false)
		c.mu.Unlock()
	}
}

// mayRunLocked is the negation of the wait conditions of Algorithm 2.
func (c *Channel) mayRunLocked(t Tier) bool {
	switch t {
	case Normal:
		return c.highLocked() < c.threshold
	case Low:
		return c.highLocked()+c.normProcLocked() < c.threshold
	}
	return true
}

// normProcLocked is the paper's len(norm_proc): running normals plus the
// normals still waiting, which Algorithm 2 line 5 counts before they wait.
func (c *Channel) normProcLocked() int {
	return c.running[Normal] + c.queues[Normal].n
}

// admitLocked records an admission and reports whether the high tier just
// became active. w is nil on the fast path.
func (c *Channel) admitLocked(t Tier, w *waiter, viaGuard bool) (slot uint32, gen uint64, notify bool) {
	slot, gen = c.tokens.take()
	if t == High && c.anticipation.active {
		c.endAnticipationLocked()
	}
	c.running[t]++
	s := &c.counters[t]
	s.admitted++
	if w != nil {
		s.waited++
		w.waited = c.clock.Now().Sub(w.since)
		s.window.add(w.waited)
		if viaGuard {
			s.guardAdmissions++
		}
	}
	c.emit(evAdmit, t, w, viaGuard)
	return slot, gen, t == High && c.running[High] == 1 && c.observed
}

// abandonLocked withdraws a waiter whose context ended.
func (c *Channel) abandonLocked(w *waiter) {
	c.queues[w.tier].remove(w)
	c.counters[w.tier].cancelled++
	c.emit(evAbandon, w.tier, w, false)
	if w.guardPass {
		// The interval's admission is still owed to someone.
		c.passGuardLocked(c.clock.Now())
	}
	// A departing normal lowers len(norm_proc), which may free the lows.
	c.wakeEligibleLocked()
}

// Entry is a request in process in the channel, from Admit or Enter: Done
// ends it. It is a value, so entering allocates nothing; a second Done, or
// the zero Entry's, does nothing (tokenTable).
type Entry struct {
	c      *Channel
	waited time.Duration
	slot   uint32
	gen    uint64
	tier   Tier
}

// Waited is how long the request waited in the channel: zero when it was
// admitted at once, so that the caller need not read a clock to know.
func (e Entry) Waited() time.Duration { return e.waited }

// Done ends the request's processing.
func (e Entry) Done() {
	if e.c != nil {
		e.c.release(e.tier, e.slot, e.gen)
	}
}

// release is Algorithm 3.
func (c *Channel) release(t Tier, slot uint32, gen uint64) {
	c.mu.Lock()
	if !c.tokens.settle(slot, gen) {
		c.mu.Unlock()
		return
	}
	c.running[t]--
	c.emit(evExit, t, nil, false)
	if t == High && c.running[High] == 0 {
		c.anticipateLocked()
	}
	notify := t == High && c.running[High] == 0 && c.observed
	c.wakeEligibleLocked()
	c.mu.Unlock()
	if notify {
		c.syncObserver()
	}
}

// wakeEligibleLocked is Algorithm 3 lines 7-16, run after every change that
// can make a wait condition false (an exit, a withdrawn normal, a raised
// threshold). Every waiter of a freed tier is signalled, in arrival order;
// each re-checks for itself.
func (c *Channel) wakeEligibleLocked() {
	if c.queues[Normal].unsignalled > 0 && c.mayRunLocked(Normal) {
		c.signalAllLocked(Normal)
	}
	if c.queues[Low].unsignalled > 0 && c.mayRunLocked(Low) {
		c.signalAllLocked(Low)
	}
}

func (c *Channel) signalAllLocked(t Tier) {
	q := &c.queues[t]
	for w := q.head; w != nil && q.unsignalled > 0; w = w.next {
		if !w.signalled {
			c.signalLocked(q, w)
		}
	}
}

func (c *Channel) signalLocked(q *waitQueue, w *waiter) {
	w.signalled = true
	q.unsignalled--
	select {
	case w.wake <- struct{}{}:
	default: // a signal is already pending; one is enough
	}
	c.emit(evSignal, w.tier, w, w.guardPass)
}

// SetThreshold changes the activation threshold at run time. Raising it may
// admit waiting requests at once; lowering it only affects later arrivals,
// since requests already in process are never preempted.
func (c *Channel) SetThreshold(n int) error {
	if n < 1 {
		return mongoerr.Newf(mongoerr.BadValue, "priority channel threshold must be at least 1, got %d", n)
	}
	c.mu.Lock()
	c.threshold = n
	c.emit(evThreshold, High, nil, false)
	c.wakeEligibleLocked()
	c.mu.Unlock()
	return nil
}
