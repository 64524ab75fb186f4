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
// inversion the tiers exist to avoid. While high-tier requests are in
// process, Inherit asks PostgreSQL every interval whom the high-tier
// backends wait for and gives those backends the high tier's nice level,
// I/O priority and CPU pool until they are no longer waited for.

// Holders names the backends that the given backends wait for.
type Holders func(ctx context.Context, waiting []int) ([]int, error)

// Inherit runs priority inheritance every interval until ctx ends.
func (c *Controller) Inherit(ctx context.Context, every time.Duration, holders Holders) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.SetBoosted(nil)
			c.boostWALPath(false)
			return
		case <-tick.C:
		}
		c.mu.Lock()
		active, _ := c.highActive()
		active = active && !c.disabled
		var high []int
		if active {
			for pid, t := range c.backends {
				if t == qos.High {
					high = append(high, pid)
				}
			}
		}
		boosting := len(c.boosted) > 0
		c.mu.Unlock()
		c.boostWALPath(len(high) > 0)
		if len(high) == 0 {
			if boosting {
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
