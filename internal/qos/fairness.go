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
type zetaControl struct {
	zeta          float64
	minZeta       float64
	ufBound       float64
	cvBound       float64
	window        time.Duration
	windowStart   time.Time
	uf, cv        float64 // last measured
	grown, halved uint64
}

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
	return c
}

// quota is L_i = φ_i·ζ_round for a user of weight w (seed 004 §4), at
// least 1 so that every backlogged user runs each round. ζ is kept per
// unit of weight: a round of users of total weight W has the total quota
// ζ_round = ζ·W, so φ_i·ζ_round = (w/W)·ζ·W = w·ζ, and one ζ suits any
// number of users.
func (c *zetaControl) quota(w float64) int {
	return max(1, int(math.Round(w*c.zeta)))
}

// roundEnded runs the control once per window.
func (c *zetaControl) roundEnded(tr *tierRound, now time.Time) {
	if now.Sub(c.windowStart) < c.window {
		return
	}
	uf, cv, ok := measure(tr)
	if ok {
		c.uf, c.cv = uf, cv
		switch {
		case uf > c.ufBound || cv > c.cvBound:
			c.zeta = math.Max(c.minZeta, c.zeta/2)
			c.halved++
		case uf < c.ufBound/2 && cv < c.cvBound/2:
			c.zeta++
			c.grown++
		}
	}
	c.windowStart = now
	for key, u := range tr.users {
		if u.pending == 0 && u.inProcess == 0 && !u.inRing && now.Sub(u.lastSeen) > c.window {
			delete(tr.users, key) // idle: its figures are taken
			continue
		}
		u.served, u.waited, u.backlogged, u.lat = 0, 0, u.pending > 0, latencyStats{}
	}
}

// measure computes U_f and V_l over the tier's users that waited in the
// window; ok is false with fewer than two such users.
func measure(tr *tierRound) (uf, cv float64, ok bool) {
	var n int
	var h float64
	for _, u := range tr.users {
		if u.backlogged {
			n++
			h += float64(u.served) / u.weight
		}
	}
	if n < 2 || h == 0 {
		return 0, 0, false
	}
	h /= float64(n)
	var cvs float64
	var ncv int
	for _, u := range tr.users {
		if !u.backlogged {
			continue
		}
		uf = math.Max(uf, math.Abs(float64(u.served)/u.weight-h)/h)
		if v, ok := u.lat.cv(); ok {
			cvs += v
			ncv++
		}
	}
	if ncv > 0 {
		cv = cvs / float64(ncv)
	}
	return uf, cv, true
}
