package qos

import "time"

// anticipationState keeps lower tiers held for a short while after the last
// high-tier request in process ends, in anticipation of that client's next
// request: the idea of anticipatory disk scheduling, applied to the channel.
//
// Why: a time-sensitive client that works back to back is out of process
// between two requests only for its own round trip. Under Algorithm 3 alone
// that gap opens the channel, every held lower-tier request is admitted at
// once, and the high tier's next request lands behind that burst (in
// PostgreSQL, in the WAL and, for majority writes, in the standbys' replay).
// Holding the gate a little longer turns the gap into a pause instead.
//
// The period is the longer of the configured one (--anticipation) and the
// one the high tier's latency objectives ask for (Gate.ObjectiveHold,
// slo.go), which the SLO controller moves.
type anticipationState struct {
	configured, objective time.Duration // both zero: off, the paper's behaviour
	active                bool          // the high tier counts as one request in process
	timer                 Timer
	// gen identifies the armed timer; a callback with an older value lost
	// a race with Stop.
	gen uint64
	// held counts anticipation periods, and expired those that ran out
	// with no new high-tier request (the guess was wrong).
	held, expired uint64
}

// every is the anticipation period.
func (a *anticipationState) every() time.Duration { return max(a.configured, a.objective) }

// SetAnticipation changes the configured anticipation period at run time;
// zero or a negative value turns it off (unless objectives ask for it) and
// releases anyone it holds.
func (c *Channel) SetAnticipation(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anticipation.configured = max(d, 0)
	c.anticipationChangedLocked()
}

// SetObjectiveAnticipation sets the period the high tier's latency
// objectives ask for (Gate.ObjectiveHold).
func (c *Channel) SetObjectiveAnticipation(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anticipation.objective = max(d, 0)
	c.anticipationChangedLocked()
}

// anticipationChangedLocked releases those held when the period is now
// zero; any other change applies from the next high-tier request on.
func (c *Channel) anticipationChangedLocked() {
	if c.anticipation.every() == 0 && c.anticipation.active {
		c.endAnticipationLocked()
		c.wakeEligibleLocked()
	}
}

// highLocked is the high tier's count for the wait conditions: the requests
// in process, or one while the channel anticipates the next.
func (c *Channel) highLocked() int {
	if c.anticipation.active {
		return max(c.running[High], 1)
	}
	return c.running[High]
}

// anticipateLocked starts an anticipation period; called when the last
// high-tier request in process ends.
func (c *Channel) anticipateLocked() {
	a := &c.anticipation
	every := a.every()
	if every == 0 {
		return
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	a.active = true
	a.held++
	a.gen++
	gen := a.gen
	a.timer = c.clock.AfterFunc(every, func() { c.anticipationExpired(gen) })
}

// endAnticipationLocked ends the period, because a high-tier request came
// (the guess was right) or because anticipation was turned off.
func (c *Channel) endAnticipationLocked() {
	a := &c.anticipation
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.active = false
	a.gen++
}

func (c *Channel) anticipationExpired(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := &c.anticipation
	if gen != a.gen {
		return
	}
	a.timer = nil
	a.active = false
	a.expired++
	c.emit(evAnticipationEnd, High, nil, false)
	c.wakeEligibleLocked()
	c.armGuardLocked()
}
