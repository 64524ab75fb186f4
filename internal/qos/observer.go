package qos

// OnHighActive registers f to learn whether any high-tier request is in
// process, so that CPU pools can shift capacity towards the high tier while
// it is busy. f is called at once with true if high requests are already in
// process, then whenever the state flips. Calls are made outside the
// channel's main lock and never overlap; flips that happen while an earlier
// call is still running are coalesced, so f always ends up told the current
// state, and consecutive calls always alternate between true and false.
//
// f runs on the goroutine of the request that caused the flip: it must be
// quick and must not admit or finish requests on this Channel (that would
// deadlock on the observer lock). Passing nil removes the observer.
func (c *Channel) OnHighActive(f func(active bool)) {
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	c.mu.Lock()
	c.observed = f != nil
	active := c.running[High] > 0
	c.mu.Unlock()
	c.observer = f
	c.reported = false
	if f != nil && active {
		c.reported = true
		f(true)
	}
}

// syncObserver reports the current state if it differs from the last one
// reported. Reading the state under obsMu, instead of passing along the
// transition the caller saw, is what keeps a late caller from overwriting a
// newer state with its stale one.
func (c *Channel) syncObserver() {
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	if c.observer == nil {
		return
	}
	c.mu.Lock()
	active := c.running[High] > 0
	c.mu.Unlock()
	if active != c.reported {
		c.reported = active
		c.observer(active)
	}
}
