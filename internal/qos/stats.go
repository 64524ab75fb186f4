package qos

import (
	"slices"
	"time"
)

// waitWindowSize is how many recent waits per tier the percentiles cover:
// enough for a stable p99, small enough to sort on every Stats call.
const waitWindowSize = 1024

// TierStats describes one tier of a Channel.
type TierStats struct {
	InProcess int // admitted and not yet done
	Waiting   int // blocked in Admit (for normal, also part of the paper's norm_proc)
	Admitted  uint64
	// Waited counts admitted requests that had to wait first.
	Waited uint64
	// Cancelled counts requests whose context ended before admission.
	Cancelled uint64
	// GuardAdmissions counts admissions the starvation guard forced while
	// the tier was held back.
	GuardAdmissions uint64
	// Wait time of the last admissions that waited (up to 1024).
	WaitP50, WaitP99, WaitMax time.Duration
}

// ChannelStats is a snapshot of a Channel.
type ChannelStats struct {
	Tiers     [NumTiers]TierStats
	Threshold int
	Guard     time.Duration
	// Anticipation is the configured period, ObjectiveAnticipation the
	// one the high tier's objectives ask for (the channel holds for the
	// longer of the two); Anticipated counts the periods started and
	// AnticipationExpired those that ended with no high-tier request.
	Anticipation, ObjectiveAnticipation time.Duration
	Anticipated, AnticipationExpired    uint64
}

type tierCounters struct {
	admitted, waited, cancelled, guardAdmissions uint64
	window                                       waitWindow
}

// waitWindow keeps the most recent wait durations in a ring.
type waitWindow struct {
	buf  []time.Duration
	next int
}

func (w *waitWindow) add(d time.Duration) {
	if len(w.buf) < waitWindowSize {
		w.buf = append(w.buf, d)
		return
	}
	w.buf[w.next] = d
	w.next = (w.next + 1) % waitWindowSize
}

// Stats returns a consistent snapshot of the channel.
func (c *Channel) Stats() ChannelStats {
	var st ChannelStats
	var windows [NumTiers][]time.Duration
	c.mu.Lock()
	st.Threshold = c.threshold
	st.Guard = c.guard.every
	st.Anticipation, st.ObjectiveAnticipation = c.anticipation.configured, c.anticipation.objective
	st.Anticipated, st.AnticipationExpired = c.anticipation.held, c.anticipation.expired
	for t := range NumTiers {
		k := &c.counters[t]
		st.Tiers[t] = TierStats{
			InProcess:       c.running[t],
			Waiting:         c.queues[t].n,
			Admitted:        k.admitted,
			Waited:          k.waited,
			Cancelled:       k.cancelled,
			GuardAdmissions: k.guardAdmissions,
		}
		windows[t] = slices.Clone(k.window.buf)
	}
	c.mu.Unlock()
	// Sorting happens outside the lock so that monitoring never delays
	// admissions.
	for t, win := range windows {
		st.Tiers[t].WaitP50, st.Tiers[t].WaitP99, st.Tiers[t].WaitMax = percentiles(win)
	}
	return st
}

// percentiles sorts ds in place and returns its nearest-rank p50 and p99 and
// its maximum; zeros when ds is empty.
func percentiles(ds []time.Duration) (p50, p99, maxD time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	rank := func(p int) time.Duration {
		i := (p*len(ds)+99)/100 - 1 // ceil(p/100 * n) - 1
		return ds[max(i, 0)]
	}
	return rank(50), rank(99), ds[len(ds)-1]
}
