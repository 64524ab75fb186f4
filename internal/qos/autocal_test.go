package qos

import (
	"testing"
	"time"
)

// A scripted day of demand, sampled once a second: a calibration starts
// when a 2 s window's mean demand reaches Busy while users share the lower
// tiers (a mean of two or more), and then no more often than Every.
func TestAutoCalibrationTrace(t *testing.T) {
	a := AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: 4}
	t0 := time.Unix(0, 0)
	steps := []struct {
		at            time.Duration
		demand, users int
		start         bool
	}{
		{0, 1, 1, false},                              // a window opens
		{time.Second, 2, 1, false},                    //
		{2 * time.Second, 3, 2, false},                // mean demand 2 < 4: idle window
		{3 * time.Second, 30, 1, false},               //
		{4 * time.Second, 30, 1, false},               // busy, but one user alone: nobody to share with
		{5 * time.Second, 8, 1, false},                //
		{6 * time.Second, 1, 3, true},                 // mean demand (8+1)/2 ≥ 4, users (1+3)/2 ≥ 2: the first calibration
		{7 * time.Second, 9, 5, false},                //
		{8 * time.Second, 9, 5, false},                // busy, but the last one is recent
		{10 * time.Minute, 9, 5, false},               // busy, but Every has not passed since 6 s
		{10*time.Minute + 6*time.Second, 9, 5, true},  // busy and Every has passed
		{30 * time.Minute, 0, 0, false},               //
		{30*time.Minute + 2*time.Second, 0, 0, false}, // idle: never
	}
	for _, s := range steps {
		if got := a.Observe(t0.Add(s.at), s.demand, s.users); got != s.start {
			t.Fatalf("at %v demand %d users %d: start %v, want %v", s.at, s.demand, s.users, got, s.start)
		}
	}
}

// A calibration that gave up (Retry) is tried again at the next busy
// window, not after Every.
func TestAutoCalibrationRetry(t *testing.T) {
	a := AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: 4}
	t0 := time.Unix(0, 0)
	a.Observe(t0, 9, 2)
	if !a.Observe(t0.Add(2*time.Second), 9, 2) {
		t.Fatal("no first calibration")
	}
	a.Retry()
	if !a.Observe(t0.Add(4*time.Second), 9, 2) {
		t.Fatal("no calibration after Retry")
	}
	if a.Observe(t0.Add(6*time.Second), 9, 2) {
		t.Fatal("a calibration within Every of the last without Retry")
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
