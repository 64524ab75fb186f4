package qos

import "time"

// guardState is the starvation guard: a timer, armed while anyone waits,
// that hands one blocked waiter a pass each interval. The idea comes from
// request-centric I/O prioritisation, where a timer guarantees that at least
// one non-critical I/O is dispatched per unit of time; the paper's channel
// alone would let low tiers starve for as long as high-tier traffic lasts.
type guardState struct {
	every time.Duration
	timer Timer
	// gen identifies the armed timer. A callback carrying an older value
	// lost a race with Stop and must do nothing.
	gen uint64
}

// SetStarvationGuard changes the guard interval at run time; zero or a
// negative value turns the guard off.
func (c *Channel) SetStarvationGuard(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d == c.guard.every {
		// Re-arming would grant a starving waiter an early pass.
		return
	}
	c.stopGuardLocked()
	c.guard.every = d
	c.armGuardLocked()
}

func (c *Channel) stopGuardLocked() {
	if c.guard.timer != nil {
		c.guard.timer.Stop()
		c.guard.timer = nil
	}
	c.guard.gen++
}

// armGuardLocked starts the timer if the guard is on, someone waits and no
// timer is pending. It is due when the oldest blocked waiter will have waited
// a full interval, so a request that just started waiting is not treated as
// starving.
func (c *Channel) armGuardLocked() {
	if c.guard.every == 0 || c.guard.timer != nil || c.queues[Normal].n+c.queues[Low].n == 0 {
		return
	}
	c.startGuardTimerLocked(c.guardDelayLocked(c.clock.Now()))
}

func (c *Channel) startGuardTimerLocked(d time.Duration) {
	c.guard.gen++
	gen := c.guard.gen
	c.guard.timer = c.clock.AfterFunc(d, func() { c.guardFire(gen) })
}

// guardDelayLocked is how long until the oldest blocked waiter without a pass
// has waited a full interval; one interval when there is none.
func (c *Channel) guardDelayLocked(now time.Time) time.Duration {
	d := c.guard.every
	for _, t := range [...]Tier{Normal, Low} {
		if w := c.guardCandidateLocked(t); w != nil {
			d = min(d, max(0, w.since.Add(c.guard.every).Sub(now)))
		}
	}
	return d
}

func (c *Channel) guardFire(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.guard.gen {
		return
	}
	c.guard.timer = nil
	if c.passGuardLocked(c.clock.Now()) {
		// One admission per interval: the next pass is due a full
		// interval from now even if others are already starving. The
		// holder of this pass is still queued, so a timer is needed.
		c.startGuardTimerLocked(c.guard.every)
		return
	}
	c.armGuardLocked()
}

// passGuardLocked gives the oldest starving waiter a pass, a normal one in
// preference to a low one, and reports whether it found one.
func (c *Channel) passGuardLocked(now time.Time) bool {
	for _, t := range [...]Tier{Normal, Low} {
		w := c.guardCandidateLocked(t)
		if w == nil || now.Sub(w.since) < c.guard.every {
			continue
		}
		w.guardPass = true
		c.emit(evGuardPass, t, w, true)
		if !w.signalled {
			c.signalLocked(&c.queues[t], w)
		}
		return true
	}
	return false
}

// guardCandidateLocked is the oldest waiter of tier t that the guard could
// help: its tier must be blocked (otherwise it is being woken anyway) and it
// must not hold a pass already.
func (c *Channel) guardCandidateLocked(t Tier) *waiter {
	if c.guard.every == 0 || c.mayRunLocked(t) {
		return nil
	}
	for w := c.queues[t].head; w != nil; w = w.next {
		if !w.guardPass {
			return w
		}
	}
	return nil
}
