package qos

import (
	"testing"
	"time"
)

// A scripted day of demand: calibrations start only after sustained
// demand, and then no more often than Every.
func TestAutoCalibrationTrace(t *testing.T) {
	a := AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: 4}
	t0 := time.Unix(0, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	steps := []struct {
		at     time.Duration
		demand int
		start  bool
	}{
		{0, 10, false},                             // busy from now
		{time.Second, 10, false},                   // not yet sustained
		{1500 * time.Millisecond, 2, false},        // a lull resets it
		{2 * time.Second, 10, false},               // busy again
		{4 * time.Second, 10, true},                // sustained 2 s: the first calibration
		{7 * time.Second, 10, false},               // sustained, but the last one is recent
		{10 * time.Minute, 10, false},              // sustained again from 7 s, but < Every
		{10*time.Minute + 4*time.Second, 10, true}, // Every passed since 4 s
		{30 * time.Minute, 1, false},               // idle: never
	}
	for _, s := range steps {
		if got := a.Observe(at(s.at), s.demand); got != s.start {
			t.Fatalf("at %v demand %d: start %v, want %v", s.at, s.demand, got, s.start)
		}
	}
}

func TestGateDemand(t *testing.T) {
	var st GateStats
	st.InProcess[High], st.InProcess[Normal] = 1, 3
	st.Tiers[Normal].Waiting, st.Tiers[Low].Waiting = 5, 2
	if got := st.Demand(); got != 11 {
		t.Fatalf("demand %d, want 11", got)
	}
}
