package qos

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// Samples drawn from a known Eq. 2 give back its parameters and its
// matching point, whichever middle sample is taken (seed 004 reports the
// fit insensitive to it).
func TestFitThroughputRecoversTheModel(t *testing.T) {
	truth := ThroughputModel{P0: 1, Lambda0: 1000, B: 0.3, G: 0.05} // peaks at P = 11
	wantC := 1
	for p := 2; p <= 64; p++ {
		if truth.Lambda(p) < truth.Lambda(wantC) {
			break
		}
		wantC = p
	}
	if wantC <= 1 || wantC >= 64 {
		t.Fatalf("the test model has no interior peak (C = %d)", wantC)
	}
	sample := func(p int) ThroughputSample { return ThroughputSample{P: p, Lambda: truth.Lambda(p)} }
	for _, p1 := range []int{4, 8, 16} {
		m, ok := FitThroughput(sample(1), sample(p1), sample(64))
		if !ok {
			t.Fatalf("P1=%d: no fit", p1)
		}
		if math.Abs(m.B-truth.B) > 1e-6 || math.Abs(m.G-truth.G) > 1e-6 {
			t.Errorf("P1=%d: B=%g γ=%g, want %g %g", p1, m.B, m.G, truth.B, truth.G)
		}
		if c := m.MatchingPoint(64); c != wantC {
			t.Errorf("P1=%d: C=%d, want %d", p1, c, wantC)
		}
	}
}

// Throughput that keeps growing linearly shows no contention: nothing to
// fit. Samples out of order are refused.
func TestFitThroughputRefusesWhatItCannotModel(t *testing.T) {
	if _, ok := FitThroughput(ThroughputSample{1, 100}, ThroughputSample{4, 400}, ThroughputSample{16, 1600}); ok {
		t.Error("linear scaling was fitted")
	}
	if _, ok := FitThroughput(ThroughputSample{4, 100}, ThroughputSample{2, 150}, ThroughputSample{16, 160}); ok {
		t.Error("samples out of order were fitted")
	}
	if _, ok := FitThroughput(ThroughputSample{1, 100}, ThroughputSample{4, 0}, ThroughputSample{16, 160}); ok {
		t.Error("a zero sample was fitted")
	}
}

// The calibrator walks P0, P1, P2 a window each, measures completions over
// the window less its settling fifth, and picks the fitted matching point.
func TestCalibratorOnASyntheticServer(t *testing.T) {
	truth := ThroughputModel{P0: 1, Lambda0: 1000, B: 0.3, G: 0.05}
	c := NewCalibrator(1, 8, 32, time.Second)
	now := time.Unix(0, 0)
	var done float64
	p := c.Start(now)
	var asked []int
	var res *Calibration
	for step := 0; res == nil && step < 1000; step++ {
		if len(asked) == 0 || asked[len(asked)-1] != p {
			asked = append(asked, p)
		}
		now = now.Add(10 * time.Millisecond)
		done += truth.Lambda(p) * 0.010
		p, res = c.Tick(now, uint64(done))
	}
	if res == nil {
		t.Fatal("calibration never ended")
	}
	if fmt.Sprint(asked) != "[1 8 32]" {
		t.Errorf("asked for P %v, want [1 8 32]", asked)
	}
	for i, s := range res.Samples {
		if want := truth.Lambda(s.P); math.Abs(s.Lambda-want)/want > 0.02 {
			t.Errorf("sample %d: λ(%d) = %.0f, want %.0f", i, s.P, s.Lambda, want)
		}
	}
	if !res.Fitted || res.P < 9 || res.P > 13 {
		t.Errorf("calibration %+v, want a fit with P near 11", res)
	}
}

// A server that scales linearly (no contention at any sampled P) gets no
// limit; one whose best sample is in the middle gets that sample.
func TestCalibrationWithoutAFit(t *testing.T) {
	run := func(lambda func(p int) float64) *Calibration {
		c := NewCalibrator(1, 4, 16, time.Second)
		now := time.Unix(0, 0)
		var done float64
		p := c.Start(now)
		for {
			now = now.Add(10 * time.Millisecond)
			done += lambda(p) * 0.010
			var res *Calibration
			if p, res = c.Tick(now, uint64(done)); res != nil {
				return res
			}
		}
	}
	if r := run(func(p int) float64 { return 100 * float64(p) }); r.Fitted || r.P != 0 {
		t.Errorf("linear server: %+v, want no limit", r)
	}
	if r := run(func(p int) float64 { return map[int]float64{1: 100, 4: 900, 16: 300}[p] }); r.P != 4 {
		t.Errorf("peak at 4: %+v, want P = 4", r)
	}
}
