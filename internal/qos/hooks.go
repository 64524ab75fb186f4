package qos

// hooks let this package's tests watch every state change of a Channel, in
// order, and pause woken waiters at the exact point where the paper's
// re-check races with new arrivals. Production channels have none.
type hooks struct {
	// event is called under Channel.mu.
	event func(event)
	// beforeRecheck is called on a woken waiter's goroutine before it
	// takes the lock to re-check its condition.
	beforeRecheck func(w *waiter)
}

type eventKind uint8

const (
	evQueue           eventKind = iota // a request started waiting
	evSignal                           // a waiter was woken
	evAdmit                            // a request was admitted (w is nil on the fast path)
	evRewait                           // a woken waiter found its condition false again
	evAbandon                          // a waiter's context ended
	evExit                             // done ran
	evThreshold                        // the threshold changed
	evGuardPass                        // the starvation guard picked w
	evAnticipationEnd                  // an anticipation period ran out
)

// event carries the channel's own counts after the change, so tests can
// compare them with a model they keep themselves.
type event struct {
	kind      eventKind
	tier      Tier
	w         *waiter
	guard     bool // evAdmit: forced by the starvation guard; evSignal: a guard pass
	threshold int
	high      int // running high requests
	normProc  int // the paper's len(norm_proc)
}

// emit is kept small enough to inline, so that the fast path pays one nil
// check for the hooks.
func (c *Channel) emit(kind eventKind, t Tier, w *waiter, guard bool) {
	if c.hooks != nil {
		c.emitSlow(kind, t, w, guard)
	}
}

func (c *Channel) emitSlow(kind eventKind, t Tier, w *waiter, guard bool) {
	if c.hooks.event == nil {
		return
	}
	c.hooks.event(event{
		kind:      kind,
		tier:      t,
		w:         w,
		guard:     guard,
		threshold: c.threshold,
		high:      c.running[High],
		normProc:  c.normProcLocked(),
	})
}
