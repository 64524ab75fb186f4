package qos

import (
	"testing"
	"time"
)

// A scripted day of demand, sampled once a second: a calibration starts
// when a 2 s window's mean demand reaches Busy, and then no more often
// than Every.
func TestAutoCalibrationTrace(t *testing.T) {
	a := AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: 4}
	t0 := time.Unix(0, 0)
	steps := []struct {
		at     time.Duration
		demand int
		start  bool
	}{
		{0, 1, false},                              // a window opens
		{time.Second, 2, false},                    //
		{2 * time.Second, 3, false},                // mean 2 < 4: idle window
		{3 * time.Second, 8, false},                //
		{4 * time.Second, 1, true},                 // mean (8+1)/2 ≥ 4: the first calibration
		{5 * time.Second, 9, false},                //
		{6 * time.Second, 9, false},                // busy, but the last one is recent
		{10 * time.Minute, 9, false},               // a new window opens
		{10*time.Minute + 2*time.Second, 9, false}, //
		{10*time.Minute + 4*time.Second, 9, true},  // busy and Every has passed
		{30 * time.Minute, 0, false},               //
		{30*time.Minute + 2*time.Second, 0, false}, // idle: never
	}
	for _, s := range steps {
		if got := a.Observe(t0.Add(s.at), s.demand); got != s.start {
			t.Fatalf("at %v demand %d: start %v, want %v", s.at, s.demand, got, s.start)
		}
	}
}

// A calibration that gave up (Retry) is tried again at the next busy
// window, not after Every.
func TestAutoCalibrationRetry(t *testing.T) {
	a := AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: 4}
	t0 := time.Unix(0, 0)
	a.Observe(t0, 9)
	if !a.Observe(t0.Add(2*time.Second), 9) {
		t.Fatal("no first calibration")
	}
	a.Retry()
	if !a.Observe(t0.Add(4*time.Second), 9) {
		t.Fatal("no calibration after Retry")
	}
	if a.Observe(t0.Add(6*time.Second), 9) {
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
