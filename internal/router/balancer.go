package router

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Balancer is Decongestant's Read Balancer (seed 001, Algorithm 1): it keeps
// the Balance Fraction, the share of adaptive reads sent to standbys, and at
// the end of every period compares the server-side latency of reads on the
// primary with that on the standbys.
type Balancer struct {
	cfg BalancerConfig

	mu          sync.Mutex
	periodStart time.Time
	lat         [2][]time.Duration // [0] primary, [1] standbys: read latencies this period
	rtt         [2][]time.Duration // round trips to the nodes this period
	recent      [4]float64         // RecentBal, oldest first
	lastRatio   float64
	decisions   []Decision
	counts      map[string]int64 // decisions since start, by reason
}

// BalancerConfig holds Algorithm 1's constants; zero values take the
// paper's.
type BalancerConfig struct {
	Period    time.Duration // default 10s
	Step      float64       // DELTA, default 0.1
	Low, High float64       // LOWBAL, HIGHBAL: default 0.1, 0.9
	// RaiseAbove and LowerBelow are HIGHRATIO and LOWRATIO: a primary/standby
	// server-side latency ratio above RaiseAbove sends more reads to
	// standbys, below LowerBelow fewer. Defaults 1.3 and 0.75.
	RaiseAbove, LowerBelow float64
}

func (c BalancerConfig) withDefaults() BalancerConfig {
	if c.Period <= 0 {
		c.Period = 10 * time.Second
	}
	if c.Step <= 0 {
		c.Step = 0.1
	}
	if c.Low <= 0 {
		c.Low = 0.1
	}
	if c.High <= 0 {
		c.High = 0.9
	}
	if c.RaiseAbove <= 0 {
		c.RaiseAbove = 1.3
	}
	if c.LowerBelow <= 0 {
		c.LowerBelow = 0.75
	}
	return c
}

// Decision is the outcome of one period.
type Decision struct {
	At       time.Time
	Ratio    float64 // 0 when a side had no reads
	Fraction float64
	Reason   string // "raise", "lower", "explore", "hold", "no data"
}

// maxSamples bounds the latencies kept per side and period: a period's
// first reads stand for it.
const maxSamples = 8192

// NewBalancer starts at the lowest non-zero fraction, as the paper does.
func NewBalancer(cfg BalancerConfig, now time.Time) *Balancer {
	cfg = cfg.withDefaults()
	b := &Balancer{cfg: cfg, periodStart: now, counts: map[string]int64{}}
	for i := range b.recent {
		b.recent[i] = cfg.Low
	}
	return b
}

// Config returns the constants in use.
func (b *Balancer) Config() BalancerConfig { return b.cfg }

// Observe records a read's latency as measured by tierdb around the
// PostgreSQL round trip, on a standby or the primary.
func (b *Balancer) Observe(onStandby bool, d time.Duration) {
	b.mu.Lock()
	b.lat[side(onStandby)] = appendBounded(b.lat[side(onStandby)], d)
	b.mu.Unlock()
}

// ObserveRTT records a round trip to a node that did no work (a monitor
// poll); the server-side latency subtracts the period's fastest.
func (b *Balancer) ObserveRTT(onStandby bool, d time.Duration) {
	b.mu.Lock()
	b.rtt[side(onStandby)] = appendBounded(b.rtt[side(onStandby)], d)
	b.mu.Unlock()
}

func side(onStandby bool) int {
	if onStandby {
		return 1
	}
	return 0
}

func appendBounded(s []time.Duration, d time.Duration) []time.Duration {
	if len(s) >= maxSamples {
		return s
	}
	return append(s, d)
}

// Tick ends the period if it is over (OnPeriodEnd of Algorithm 1) and
// reports whether it did.
func (b *Balancer) Tick(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.periodStart) < b.cfg.Period {
		return false
	}
	b.periodStart = now
	latest := b.recent[len(b.recent)-1]
	d := Decision{At: now}
	lp, okP := median(b.lat[0])
	ls, okS := median(b.lat[1])
	rp := minimum(b.rtt[0])
	rs := minimum(b.rtt[1])
	b.lat, b.rtt = [2][]time.Duration{b.lat[0][:0], b.lat[1][:0]}, [2][]time.Duration{b.rtt[0][:0], b.rtt[1][:0]}
	next := latest
	switch {
	case !okP || !okS:
		// Without reads on both sides there is nothing to compare; the
		// fraction never drops below LOWBAL, so both sides get reads in the
		// next period unless staleness forbids standbys.
		d.Reason = "no data"
	default:
		// Server-side latency: client-observed median minus the round
		// trip; at least 1µs so that an idle side does not divide by zero.
		// Seed 001 subtracts the median heartbeat round trip, which on
		// MongoDB is network time. Here a round trip is a monitor query,
		// which a congested node answers as late as a read (on a node
		// capped at 0.12 CPU the primary's median probe took as long as
		// its reads, the ratio fell to 0.01-0.07 and the balancer kept
		// lowering the fraction). The period's fastest probe is the
		// least-queued one: the best estimate of the fixed cost.
		ssP := max(lp-rp, time.Microsecond)
		ssS := max(ls-rs, time.Microsecond)
		d.Ratio = float64(ssP) / float64(ssS)
		allSame := true
		for _, r := range b.recent {
			allSame = allSame && r == latest
		}
		switch {
		case d.Ratio > b.cfg.RaiseAbove:
			next, d.Reason = min(latest+b.cfg.Step, b.cfg.High), "raise"
		case d.Ratio < b.cfg.LowerBelow:
			next, d.Reason = max(latest-b.cfg.Step, b.cfg.Low), "lower"
		case allSame:
			next, d.Reason = max(latest-b.cfg.Step, b.cfg.Low), "explore"
		default:
			d.Reason = "hold"
		}
	}
	next = roundFraction(next)
	copy(b.recent[:], b.recent[1:])
	b.recent[len(b.recent)-1] = next
	b.lastRatio = d.Ratio
	d.Fraction = next
	b.decisions = append(b.decisions, d)
	b.counts[d.Reason]++
	if len(b.decisions) > 32 {
		b.decisions = slices.Delete(b.decisions, 0, len(b.decisions)-32)
	}
	return true
}

// roundFraction keeps fractions on the 1% grid so that repeated steps of
// 0.1 compare equal ("all recent entries the same").
func roundFraction(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// minimum is zero for no samples: nothing to subtract.
func minimum(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return slices.Min(s)
}

func median(s []time.Duration) (time.Duration, bool) {
	if len(s) == 0 {
		return 0, false
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2], true
}

// Fraction is the current Balance Fraction before staleness gating.
func (b *Balancer) Fraction() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recent[len(b.recent)-1]
}

// Status is the balancer's state for qosStatus-like reports.
type Status struct {
	Fraction  float64
	LastRatio float64
	Decisions []Decision       // the last 32
	Counts    map[string]int64 // every decision since start, by reason
}

// Status returns the fraction, the last ratio and recent decisions.
func (b *Balancer) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Status{Fraction: b.recent[len(b.recent)-1], LastRatio: b.lastRatio, Decisions: slices.Clone(b.decisions), Counts: maps.Clone(b.counts)}
}
