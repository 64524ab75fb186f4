package qos

import (
	"math"
	"slices"
	"time"
)

// ThroughputSample is a throughput λ measured with the delivered
// parallelism limited to P.
type ThroughputSample struct {
	P      int
	Lambda float64 // requests per second
}

// ThroughputModel is seed 004's model of throughput against delivered
// parallelism (§4.3.1): the parallel fraction
//
//	α(P) = A + B·e^(−γP)                                        (Eq. 1)
//
// gives, with α(P0) = 1 at a small P0,
//
//	λ(P) = P·λ(P0) / (P0 + B·P0·(e^(−γP0) − e^(−γP))·(P − 1))   (Eq. 2)
type ThroughputModel struct {
	P0            int
	Lambda0, B, G float64 // λ(P0), B, γ
}

// Lambda is Eq. 2.
func (m ThroughputModel) Lambda(p int) float64 {
	fp, f0 := float64(p), float64(m.P0)
	return fp * m.Lambda0 / (f0 + m.B*f0*(math.Exp(-m.G*f0)-math.Exp(-m.G*fp))*(fp-1))
}

// FitThroughput pins Eq. 2 down from three samples, P0 < P1 < P2 (seed 004
// takes λ(P2) unconstrained and λ(P1) in between): each of the two upper
// samples gives K(P) = (P·λ0/λ(P) − P0) / (P0·(P − 1)) = B·(e^(−γP0) − e^(−γP)),
// their ratio fixes γ (found by bisection, the ratio being monotonic in γ)
// and then B. ok is false when the samples show no contention to model
// (throughput growing at least linearly) or do not fit Eq. 2.
func FitThroughput(s0, s1, s2 ThroughputSample) (m ThroughputModel, ok bool) {
	if !(s0.P >= 1 && s0.P < s1.P && s1.P < s2.P) || s0.Lambda <= 0 || s1.Lambda <= 0 || s2.Lambda <= 0 {
		return m, false
	}
	p0, p1, p2 := float64(s0.P), float64(s1.P), float64(s2.P)
	k := func(p, lambda float64) float64 { return (p*s0.Lambda/lambda - p0) / (p0 * (p - 1)) }
	k1, k2 := k(p1, s1.Lambda), k(p2, s2.Lambda)
	if k1 <= 0 || k2 <= 0 {
		return m, false
	}
	// r(γ) = (1 − e^(−γ(P1−P0))) / (1 − e^(−γ(P2−P0))) rises from
	// (P1−P0)/(P2−P0) at γ → 0 to 1 at γ → ∞.
	ratio := func(g float64) float64 { return -math.Expm1(-g*(p1-p0)) / -math.Expm1(-g*(p2-p0)) }
	want := k1 / k2
	if want <= (p1-p0)/(p2-p0) || want >= 1 {
		return m, false
	}
	lo, hi := 1e-9, 1.0
	for ratio(hi) < want && hi < 1e6 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if ratio(mid) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	g := (lo + hi) / 2
	b := k1 / (math.Exp(-g*p0) - math.Exp(-g*p1))
	return ThroughputModel{P0: s0.P, Lambda0: s0.Lambda, B: b, G: g}, true
}

// MatchingPoint is C, the first local maximum of Eq. 2 for P in
// [P0, maxP]: the smallest parallelism at which throughput peaks.
func (m ThroughputModel) MatchingPoint(maxP int) int {
	best := m.P0
	for p := m.P0 + 1; p <= maxP; p++ {
		if m.Lambda(p) < m.Lambda(best) {
			break
		}
		best = p
	}
	return best
}

// Calibration is the outcome of one calibration of P.
type Calibration struct {
	Samples [3]ThroughputSample
	// Fitted says Eq. 2 fitted the samples; then Model is the fit and
	// Predicted its matching point C.
	Fitted    bool
	Model     ThroughputModel
	Predicted int
	// Check is the throughput measured at C when C was not one of the
	// three samples (P 0 otherwise).
	Check ThroughputSample
	// Noise is how far one P's slices lie from their median (the median
	// absolute deviation relative to the median, the largest over the
	// points): what the machine's own variation is worth in throughput
	// while the calibration ran (see decide).
	Noise float64
	// P is the outcome: the smallest measured point (a sample or C) whose
	// throughput is within the margin (5 % to 15 %, see decide) of the most
	// measured; 0 (no limit) when that is the largest sample, i.e. only no
	// limit reached the peak; -1 when the calibration gave up (the high
	// tier never left it a window, or no request completed in any).
	P int
	// ForFairness says that P (> 0) buys no throughput the calibration
	// could tell: the largest sample, no limit, was within the margin of
	// the peak too. A smaller P then only serves fairness and latency
	// between users, and the gate applies it only while two or more users
	// have requests (FairConfig.ParallelismForFairness).
	ForFairness bool
	// Interrupted says it gave up because the high tier left it no window
	// (worth trying again soon, unlike a traffic on which nothing completes).
	Interrupted bool
	At          time.Time
}

// Calibrator measures the three samples of §4.3.1 on live traffic: it asks
// for P = P0, P1, P2 for a window each, taken as calibrationSlices slices
// interleaved in the order P0 P1 P2, P2 P1 P0, P0 P1 P2, P2 P1 P0, each
// slice's first fifth left to settle, and takes the median of each P's
// slice rates. A busy machine's own swings (a neighbour's burst, a stall
// of the disk) last from a fraction of a second to seconds: interleaved,
// they fall on every P alike instead of on one P's whole window, the
// order cancels a steady drift, and the median leaves out the slice a
// burst hit. The fit's matching point C is then measured too (the check):
// Eq. 2 is a model, and on a machine whose curve it does not match its
// peak can fall where the throughput is lower than at a sampled P. The
// check comes after the samples, so P2 is measured again beside it, slice
// for slice, and the check's throughput is scaled by how far P2's moved
// in between: a run still warming up would otherwise favour the check
// (qos-overhead: C = 4 measured 4862/s against P2's 3636/s a few seconds
// earlier, and the lone user held to P = 4 then ran 20 % slower than with
// no limit).
//
// A sample is only taken while the high tier is idle: while it is active
// the restricted share, not P, bounds the lower tiers, so a slice the
// high tier interrupts starts again once it is idle. A calibration that
// cannot get its samples within twenty windows gives up (Calibration.P is
// then -1: keep the P there was). It is pure logic: its driver sets the
// gate's P and feeds it the clock and the gate's completion count.
type Calibrator struct {
	// points are P0, P1, P2 and, once the fit asks for it, the check's C
	// and P2 again beside it.
	points [5]int
	window time.Duration
	// order is the slices still to take, by index into points.
	order []int
	// The slice being taken: when its settling ended and the count then.
	measuring bool
	started   time.Time
	since     time.Time
	count     uint64
	// rates are each point's slices' throughputs.
	rates [5][]float64
	fit   *Calibration
}

// calibrationSlices is how many slices each point's window is taken in:
// even, so that the order's halves mirror each other.
const calibrationSlices = 4

// NewCalibrator samples at p0 < p1 < p2, window each.
func NewCalibrator(p0, p1, p2 int, window time.Duration) *Calibrator {
	return &Calibrator{points: [5]int{p0, p1, p2}, window: window}
}

// Start begins the first sample at now; the driver sets P to the value
// returned.
func (c *Calibrator) Start(now time.Time) int {
	*c = Calibrator{points: c.points, window: c.window, started: now, since: now}
	c.points[3], c.points[4] = 0, 0
	for i := range calibrationSlices {
		if i%2 == 0 {
			c.order = append(c.order, 0, 1, 2)
		} else {
			c.order = append(c.order, 2, 1, 0)
		}
	}
	return c.points[0]
}

// sample is what was measured at points[i]: the median of its slices.
func (c *Calibrator) sample(i int) ThroughputSample {
	return ThroughputSample{P: c.points[i], Lambda: median(c.rates[i])}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}

// Tick advances the calibration: completed is the gate's completion count
// at now, highActive whether the high tier is active. It returns the P the
// driver must set next (unchanged while a sample runs) and, once the last
// sample is taken, the result.
func (c *Calibrator) Tick(now time.Time, completed uint64, highActive bool) (p int, result *Calibration) {
	slice := c.window / calibrationSlices
	settle := slice / 5
	switch {
	case now.Sub(c.started) > 20*c.window:
		return 0, &Calibration{P: -1, Interrupted: true, At: now}
	case highActive:
		c.measuring, c.since = false, now // settle again once it is idle
	case !c.measuring && now.Sub(c.since) >= settle:
		c.measuring, c.since, c.count = true, now, completed
	case c.measuring && now.Sub(c.since) >= slice-settle:
		i := c.order[0]
		c.rates[i] = append(c.rates[i], float64(completed-c.count)/now.Sub(c.since).Seconds())
		c.measuring, c.since, c.order = false, now, c.order[1:]
		if len(c.order) > 0 {
			break
		}
		if c.fit != nil { // the check is taken
			c.fit.Check = c.checkSample()
			return 0, c.decide(now)
		}
		c.fit = c.model()
		if !c.fit.Fitted || slices.Contains(c.points[:3], c.fit.Predicted) {
			return 0, c.decide(now)
		}
		c.points[3], c.points[4] = c.fit.Predicted, c.points[2]
		for i := range calibrationSlices {
			if i%2 == 0 {
				c.order = append(c.order, 3, 4)
			} else {
				c.order = append(c.order, 4, 3)
			}
		}
	}
	return c.points[c.order[0]], nil
}

// checkSample is the check's sample, its throughput scaled by the ratio
// of P2's first samples to P2's beside the check.
func (c *Calibrator) checkSample() ThroughputSample {
	s := c.sample(3)
	if again := median(c.rates[4]); again > 0 {
		s.Lambda *= median(c.rates[2]) / again
	}
	return s
}

// model fits Eq. 2 to the three samples.
func (c *Calibrator) model() *Calibration {
	r := &Calibration{Samples: [3]ThroughputSample{c.sample(0), c.sample(1), c.sample(2)}}
	if m, ok := FitThroughput(r.Samples[0], r.Samples[1], r.Samples[2]); ok {
		r.Fitted, r.Model, r.Predicted = true, m, m.MatchingPoint(c.points[2])
	}
	return r
}

// nearPeak is how close to the most throughput measured a smaller P's
// must be to win: seed 004 wants the smallest P at which throughput peaks,
// and on a busy machine two windows at the same P differ by more than a
// few per cent. When the slices of one P lie further apart than that
// (Calibration.Noise), the margin widens to that, up to maxMargin: a
// smaller P whose throughput the machine's own variation cannot tell
// from the peak's is as good as the peak, and is better for latency and
// fairness.
const (
	nearPeak  = 0.95
	maxMargin = 0.15
)

// noise is the largest median absolute deviation of one point's slice
// rates, relative to their median.
func (c *Calibrator) noise() float64 {
	var worst float64
	for _, r := range c.rates {
		m := median(r)
		if len(r) < 2 || m <= 0 {
			continue
		}
		dev := make([]float64, len(r))
		for i, x := range r {
			dev[i] = math.Abs(x - m)
		}
		worst = max(worst, median(dev)/m)
	}
	return worst
}

// decide picks the smallest measured P whose throughput is within the
// margin (nearPeak, or the noise up to maxMargin) of the most measured,
// and says whether no limit was within it too, or within the noise
// (ForFairness).
func (c *Calibrator) decide(now time.Time) *Calibration {
	r := c.fit
	r.At = now
	r.Noise = c.noise()
	margin := min(max(1-nearPeak, r.Noise), maxMargin)
	measured := r.Samples[:]
	if r.Check.P > 0 {
		measured = append(measured, r.Check)
	}
	peak := 0.0
	for _, s := range measured {
		peak = max(peak, s.Lambda)
	}
	if peak == 0 { // nothing completed: nothing learnt, keep the P there was
		r.P = -1
		return r
	}
	near := func(s ThroughputSample) bool { return s.Lambda >= (1-margin)*peak }
	best := c.points[2]
	for _, s := range measured {
		if near(s) && s.P < best {
			best = s.P
		}
	}
	if best != c.points[2] {
		r.P = best
		// No limit is the peak's equal, and P buys only fairness, when it
		// is within the margin, or within the noise however wide: past
		// maxMargin the machine cannot tell the points apart at all.
		r.ForFairness = near(r.Samples[2]) || r.Samples[2].Lambda >= (1-r.Noise)*peak
	}
	return r
}
