package tierctl

import (
	"context"
	"time"

	"tierdb/internal/qos"
)

// Priority inheritance in user space (seed 002 §4.2). A high-tier request
// that waits inside PostgreSQL for a lock held by a lower-tier backend (a
// row lock, or the WAL write lock while that backend flushes) runs at the
// holder's speed; with the holder at nice 19 that is the priority
// inversion the tiers exist to avoid. Once the high tier has been busy
// without a pause for half an interval, Inherit asks PostgreSQL whom the
// high-tier backends wait for (at most once an interval) and gives those
// backends the high tier's nice level, I/O priority and CPU pool until
// they are no longer waited for. A high-tier client whose requests are
// short never pays for the question: asking every interval whenever the
// high tier was active cost the server's one CPU a query every 2 ms, and
// made fig5-hotkey's tail longer rather than shorter.

// Holders names the backends that the given backends wait for.
type Holders func(ctx context.Context, waiting []int) ([]int, error)

// Inherit runs priority inheritance until ctx ends, looking twice an
// interval.
func (c *Controller) Inherit(ctx context.Context, every time.Duration, holders Holders) {
	tick := time.NewTicker(max(every/2, time.Millisecond/2))
	defer tick.Stop()
	// seen is the busy spell of the last look, if it is to be asked about
	// at this one (0: none); boostedFor the spell the boosts were made in.
	var seen, boostedFor uint64
	for {
		select {
		case <-ctx.Done():
			c.SetBoosted(nil)
			c.boostWALPath(false)
			return
		case <-tick.C:
		}
		c.mu.Lock()
		active, spell, ended := c.highActive()
		active = active && !c.disabled
		// The WAL path follows the high tier as the lower tiers' nice
		// levels do (Controller.follow), with a hold: each change lists
		// PostgreSQL's processes and renices them, too dear to do at every
		// pause of a back-to-back client.
		walPath := active || !c.disabled && time.Since(ended) < c.highHold()
		// Ask only about a spell already busy at the last look; after
		// asking, the next look re-arms, so at most once an interval.
		ask := active && spell == seen
		seen = 0
		if active && !ask {
			seen = spell
		}
		var high []int
		if ask {
			for pid, t := range c.backends {
				if t == qos.High {
					high = append(high, pid)
				}
			}
		}
		boosting := len(c.boosted) > 0
		c.mu.Unlock()
		c.boostWALPath(walPath)
		if !ask || len(high) == 0 {
			// Boosts last while their spell does: a new spell has had no
			// high-tier request waiting long yet.
			if boosting && !(active && spell == boostedFor) {
				c.SetBoosted(nil)
			}
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, max(every, 50*time.Millisecond))
		pids, err := holders(qctx, high)
		cancel()
		if err != nil {
			c.mu.Lock()
			c.warnOnce("inherit", "priority inheritance cannot ask PostgreSQL who holds the locks high-tier requests wait for", "err", err)
			c.mu.Unlock()
			continue
		}
		boostedFor = spell
		c.SetBoosted(pids)
	}
}

// SetBoosted makes exactly pids run with the high tier's OS settings (those
// of tierdb's backends among them; others are not ours to touch) and puts
// every backend boosted before and not now back to its own tier's.
func (c *Controller) SetBoosted(pids []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[int]bool, len(pids))
	for _, pid := range pids {
		if t, ok := c.backends[pid]; ok && t != qos.High {
			next[pid] = true
		}
	}
	for pid := range c.boosted {
		if !next[pid] {
			delete(c.boosted, pid)
			if t, ok := c.backends[pid]; ok {
				c.apply(pid, t)
			}
		}
	}
	for pid := range next {
		if !c.boosted[pid] {
			c.boosted[pid] = true
			c.boosts++
			c.apply(pid, c.backends[pid])
		}
	}
}

// boostWALPath gives the processes that carry commits to disk and to the
// standbys (onWALPath: the WAL writer and senders, and each local
// standby's WAL receiver and startup process, which replays) the high
// tier's nice level while high-tier requests are in process, and nice 0
// again after. A high-tier majority write waits for a standby to replay it;
// at nice 0 its replay competes with the lower tiers' backends for the
// CPU. Only the changes cost system calls: the processes are listed at
// each change, not at every tick.
func (c *Controller) boostWALPath(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on == c.walBoosted || c.bgProcs == nil || c.disabled || !c.cfg.Enabled {
		return
	}
	procs, err := c.bgProcs()
	if err != nil {
		c.warnOnce("bgpids", "cannot list PostgreSQL background processes", "err", err)
		return
	}
	c.walBoosted = on
	nice := 0
	if on && !c.noRaise {
		nice = c.cfg.Nice[qos.High]
	}
	for _, p := range procs {
		if onWALPath(p.Title) && isLocalPostgres(p.PID) {
			c.report(p.PID, c.applier.Apply(p.PID, c.niceSettings(nice)))
		}
	}
}
