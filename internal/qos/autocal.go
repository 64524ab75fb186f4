package qos

import "time"

// AutoCalibration decides when tierdb re-estimates P by itself, on seed
// 004's slow timescale (§4.3.1): when, averaged over a window of Sustain,
// the demand (requests in process or waiting at the gate) is at least Busy
// and two or more users share the lower tiers, and the last calibration it
// started is older than Every (or there was none). Below Busy a limit on P
// could not hold anything back, so there is nothing to find. A lone user
// is not calibrated for: its samples at small P cost it throughput
// (fig5-paper's 31 clients of one host ran at 0.90× QoS off over the 4 s a
// calibration filled), while what a calibration finds for it is
// no limit, or a P that buys only fairness and so binds only while users
// share (Calibration.ForFairness). It is pure logic: the caller feeds it
// the time, the demand and the users and starts the calibration.
type AutoCalibration struct {
	Every, Sustain time.Duration
	Busy           int

	windowStart time.Time
	sum, users  int // the window's demand and users, summed
	n           int // over n observations
	last        time.Time
	started     bool
}

// Observe records the demand and the lower tiers' users with requests
// (GateStats.Users) at now and reports whether a calibration should start.
func (a *AutoCalibration) Observe(now time.Time, demand, users int) bool {
	if a.windowStart.IsZero() {
		a.windowStart = now
	}
	a.sum += demand
	a.users += users
	a.n++
	if now.Sub(a.windowStart) < a.Sustain {
		return false
	}
	// The window's mean demand ≥ Busy, its mean users ≥ 2.
	busy := a.sum >= a.Busy*a.n && a.users >= 2*a.n
	a.windowStart, a.sum, a.users, a.n = now, 0, 0, 0
	if !busy || a.started && now.Sub(a.last) < a.Every {
		return false
	}
	a.started, a.last = true, now
	return true
}

// Demand is what the gate holds: requests of every tier in process and
// waiting.
func (s GateStats) Demand() int {
	n := 0
	for t := range s.InProcess {
		n += s.InProcess[t] + s.Tiers[t].Waiting
	}
	return n
}

// Retry forgets the last calibration (it gave up), so the next busy window
// starts one rather than waiting for Every.
func (a *AutoCalibration) Retry() { a.started = false }
