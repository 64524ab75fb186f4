package qos

import "time"

// AutoCalibration decides when tierdb re-estimates P by itself, on seed
// 004's slow timescale (§4.3.1): when the demand (requests in process or
// waiting at the gate) averaged over a window of Sustain is at least Busy,
// and the last calibration it started is older than Every (or there was
// none). Below Busy a limit on P could not hold anything back, so there is
// nothing to find. It is pure logic: the caller feeds it the time and the
// demand and starts the calibration.
type AutoCalibration struct {
	Every, Sustain time.Duration
	Busy           int

	windowStart time.Time
	sum, n      int
	last        time.Time
	started     bool
}

// Observe records the demand at now and reports whether a calibration
// should start.
func (a *AutoCalibration) Observe(now time.Time, demand int) bool {
	if a.windowStart.IsZero() {
		a.windowStart = now
	}
	a.sum += demand
	a.n++
	if now.Sub(a.windowStart) < a.Sustain {
		return false
	}
	busy := a.sum >= a.Busy*a.n // the window's mean demand ≥ Busy
	a.windowStart, a.sum, a.n = now, 0, 0
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
