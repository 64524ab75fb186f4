package qos

import (
	"math"
	"time"
)

// zetaControl is seed 004's fast-timescale control of the round quota ζ
// (§4.3.2) for one tier: at the end of a round, once per window, it
// measures
//
//	U_f = max_i |N_i/φ_i − H| / H,  H = (Σ_i N_i/φ_i) / n          (§2)
//
// over the n users that waited during the window (N_i: requests admitted,
// φ_i: weight), and V_l, the coefficient of variation of request latency
// averaged over users; then it grows ζ while both are under half their
// bounds and halves it when either is over its bound.
//
// Our addition: it also sets the tier's round anticipation d
// (tierRound.anticipate), unless d is fixed by configuration. ζ is the
// work-conserving knob and d the one that is not, so ζ goes first both
// ways: d grows only while ζ is at its minimum, and ζ grows only while d
// is zero. d moves on a slower timescale, once per anticipationWindows
// windows, by U_f measured over that longer span (over 100 ms a user has
// too few requests for U_f to fall under a bound of 10 % even when the
// shares are equal): while U_f is over its bound, d doubles (from
// anticipationStep) up to maxAnticipation, so it reaches what the server
// needs in a few spans; while U_f is under half its bound, or fewer than
// two users waited (or too few requests to tell, see measure), d shrinks
// by a step. A tier whose users' shares are fair without holding slots
// never holds any.
type zetaControl struct {
	zeta          float64
	minZeta       float64
	ufBound       float64
	cvBound       float64
	window        time.Duration
	windowStart   time.Time
	uf, cv        float64 // last measured
	grown, halved uint64
	// anticipation is d; autoAnticipation says the control sets it, from
	// ufLong, U_f over the last span of anticipationWindows windows that
	// could be measured; windows counts the windows of the span in
	// progress.
	anticipation     time.Duration
	autoAnticipation bool
	ufLong           float64
	windows          int
}

// The adaptive anticipation's timescale (in windows), its step, its
// ceiling and the admissions per user a span needs (measure). The ceiling
// is about one request's latency on a busy server (a polite user's on
// greedy-polite: 2–3 ms on this machine): holding slots longer costs more
// throughput than it buys. A held slot is idle only until the user's
// request arrives: it takes the slot at once.
const (
	anticipationWindows = 10
	anticipationStep    = 100 * time.Microsecond
	maxAnticipation     = 2 * time.Millisecond
	minLongServed       = 100
)

func newZetaControl(opts GateOptions, now time.Time) zetaControl {
	c := zetaControl{zeta: float64(opts.Zeta), minZeta: 1, ufBound: opts.UnfairnessBound, cvBound: opts.CVBound, window: opts.Window, windowStart: now}
	if c.zeta == 0 {
		c.zeta = 8
	}
	if c.ufBound == 0 {
		c.ufBound = 0.10
	}
	if c.cvBound == 0 {
		c.cvBound = 1.0
	}
	if c.window == 0 {
		c.window = 100 * time.Millisecond
	}
	c.setAnticipation(opts.Anticipation, opts.AutoAnticipation)
	return c
}

// setAnticipation fixes d, or hands it to the control (starting at zero).
func (c *zetaControl) setAnticipation(d time.Duration, auto bool) {
	if auto && c.autoAnticipation {
		return // keep what the control found
	}
	c.autoAnticipation = auto
	c.anticipation = d
	if auto {
		c.anticipation = 0
	}
}

// quota is L_i = φ_i·ζ_round for a user of weight w (seed 004 §4), at
// least 1 so that every backlogged user runs each round. ζ is kept per
// unit of weight: a round of users of total weight W has the total quota
// ζ_round = ζ·W, so φ_i·ζ_round = (w/W)·ζ·W = w·ζ, and one ζ suits any
// number of users.
func (c *zetaControl) quota(w float64) int {
	return max(1, int(math.Round(w*c.zeta)))
}

// roundEnded runs the control once per window: at the end of a round, or
// at an admission while nothing waits (Gate.Admit), when there is no round.
func (c *zetaControl) roundEnded(tr *tierRound, now time.Time) {
	if now.Sub(c.windowStart) < c.window {
		return
	}
	uf, cv, ok := measure(tr, false)
	if ok {
		c.uf, c.cv = uf, cv
		switch {
		case uf > c.ufBound || cv > c.cvBound:
			c.zeta = math.Max(c.minZeta, c.zeta/2)
			c.halved++
		case uf < c.ufBound/2 && cv < c.cvBound/2 && (!c.autoAnticipation || c.anticipation == 0):
			c.zeta++
			c.grown++
		}
	}
	c.windows++
	longEnded := c.windows >= anticipationWindows
	if longEnded {
		c.windows = 0
		if c.autoAnticipation {
			c.adjustAnticipation(tr)
		}
	}
	c.windowStart = now
	for key, u := range tr.users {
		if u.pending == 0 && u.inProcess == 0 && !u.inRing && now.Sub(u.lastSeen) > c.window {
			delete(tr.users, key) // idle: its figures are taken
			continue
		}
		if longEnded {
			u.servedLong, u.backloggedLong = 0, false
		} else {
			u.servedLong += u.served
			u.backloggedLong = u.backloggedLong || u.backlogged
		}
		u.served, u.waited, u.backlogged, u.lat = 0, 0, u.pending > 0, latencyStats{}
	}
}

// adjustAnticipation moves d by U_f over the span that just ended.
func (c *zetaControl) adjustAnticipation(tr *tierRound) {
	uf, _, ok := measure(tr, true)
	if ok {
		c.ufLong = uf
	}
	switch {
	case !ok || uf < c.ufBound/2:
		c.anticipation = max(0, c.anticipation-anticipationStep)
	case uf > c.ufBound && c.zeta == c.minZeta:
		c.anticipation = min(maxAnticipation, max(anticipationStep, 2*c.anticipation))
	}
}

// measure computes U_f and V_l over the tier's users without a latency
// objective (SLO mode sends theirs ahead on purpose: their share is the
// objective's, not the round-robin's) that waited in the window; ok is
// false with fewer than two such users. With long it computes U_f alone,
// over the anticipation's longer span, and ok is also false when those
// users had fewer than minLongServed admissions each on average: with
// fewer, U_f measures the counts' own granularity, not the round-robin.
func measure(tr *tierRound, long bool) (uf, cv float64, ok bool) {
	counts := func(u *fairUser) (served float64, backlogged bool) {
		if long {
			return float64(u.servedLong+u.served) / u.weight, (u.backloggedLong || u.backlogged) && u.slo == nil
		}
		return float64(u.served) / u.weight, u.backlogged && u.slo == nil
	}
	var n int
	var h float64
	for _, u := range tr.users {
		if served, backlogged := counts(u); backlogged {
			n++
			h += served
		}
	}
	if n < 2 || h == 0 || (long && h < minLongServed*float64(n)) {
		return 0, 0, false
	}
	h /= float64(n)
	var cvs float64
	var ncv int
	for _, u := range tr.users {
		served, backlogged := counts(u)
		if !backlogged {
			continue
		}
		uf = math.Max(uf, math.Abs(served-h)/h)
		if v, ok := u.lat.cv(); ok && !long {
			cvs += v
			ncv++
		}
	}
	if ncv > 0 {
		cv = cvs / float64(ncv)
	}
	return uf, cv, true
}
