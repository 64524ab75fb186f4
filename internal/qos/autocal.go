package qos

import "time"

// AutoCalibration decides when tierdb re-estimates P by itself, on seed
// 004's slow timescale (§4.3.1): once demand (requests in process or
// waiting at the gate) has stayed at Busy or more for Sustain, and the
// last calibration it started is older than Every (or there was none).
// Below Busy a limit on P could not hold anything back, so there is
// nothing to find. It is pure logic: the caller feeds it the time and the
// demand and starts the calibration.
type AutoCalibration struct {
	Every, Sustain time.Duration
	Busy           int

	busySince time.Time
	last      time.Time
	started   bool
}

// Observe records the demand at now and reports whether a calibration
// should start.
func (a *AutoCalibration) Observe(now time.Time, demand int) bool {
	if demand < a.Busy {
		a.busySince = time.Time{}
		return false
	}
	if a.busySince.IsZero() {
		a.busySince = now
	}
	if now.Sub(a.busySince) < a.Sustain || a.started && now.Sub(a.last) < a.Every {
		return false
	}
	a.started, a.last, a.busySince = true, now, time.Time{}
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
