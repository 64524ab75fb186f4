package repl

import (
	"math/rand/v2"
	"testing"
	"time"
)

var base = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// contents lists a history's samples, oldest first.
func contents(h *history) []sample {
	out := make([]sample, h.n)
	for i := range out {
		out[i] = h.at(i)
	}
	return out
}

func TestHistoryFreshAsOf(t *testing.T) {
	h := newHistory(8)
	if _, ok := h.freshAsOf(1 << 40); ok {
		t.Fatal("empty history answered")
	}
	if _, ok := h.last(); ok {
		t.Fatal("empty history has a last sample")
	}
	for _, s := range []sample{{at(0), 100}, {at(10), 200}, {at(20), 200}, {at(30), 300}, {at(40), 300}, {at(50), 400}} {
		h.add(s)
	}
	tests := []struct {
		applied uint64
		want    time.Time
		ok      bool
	}{
		{0, time.Time{}, false},
		{99, time.Time{}, false},
		{100, at(0), true},
		{150, at(0), true},
		{199, at(0), true},
		// Equal positions: the latest sample with that position counts.
		{200, at(20), true},
		{250, at(20), true},
		{300, at(40), true},
		{399, at(40), true},
		{400, at(50), true},
		// Beyond the newest sample: fresh as of that sample, not later.
		{1 << 62, at(50), true},
	}
	for _, tt := range tests {
		got, ok := h.freshAsOf(tt.applied)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("freshAsOf(%d) = %v, %v; want %v, %v", tt.applied, got, ok, tt.want, tt.ok)
		}
	}
	if s, ok := h.last(); !ok || s != (sample{at(50), 400}) {
		t.Errorf("last = %v, %v; want the sample at 50ms", s, ok)
	}
}

func TestHistoryOverflowKeepsNewest(t *testing.T) {
	h := newHistory(3)
	for i := 1; i <= 7; i++ {
		h.add(sample{at(i), uint64(100 * i)})
		if want := min(i, 3); h.n != want {
			t.Fatalf("after %d samples: %d kept, want %d", i, h.n, want)
		}
	}
	want := []sample{{at(5), 500}, {at(6), 600}, {at(7), 700}}
	got := contents(h)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("contents %v, want %v", got, want)
		}
	}
	// Positions of dropped samples are now older than every sample kept.
	if _, ok := h.freshAsOf(499); ok {
		t.Error("freshAsOf(499) answered after its samples were dropped")
	}
	if got, ok := h.freshAsOf(500); !ok || !got.Equal(at(5)) {
		t.Errorf("freshAsOf(500) = %v, %v; want 5ms", got, ok)
	}
	if got, ok := h.freshAsOf(650); !ok || !got.Equal(at(6)) {
		t.Errorf("freshAsOf(650) = %v, %v; want 6ms", got, ok)
	}
	if got, ok := h.freshAsOf(1000); !ok || !got.Equal(at(7)) {
		t.Errorf("freshAsOf(1000) = %v, %v; want 7ms", got, ok)
	}
}

func TestHistoryDecreasingPositionResets(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before int // samples added before the new primary's
	}{
		{"partly filled", 2},
		{"full", 4},
		{"wrapped", 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(4)
			for i := 1; i <= tt.before; i++ {
				h.add(sample{at(i), uint64(1000 * i)})
			}
			// A new primary whose positions are behind the old one's.
			h.add(sample{at(100), 50})
			if h.n != 1 {
				t.Fatalf("%d samples kept after a decreasing position, want 1", h.n)
			}
			if s, ok := h.last(); !ok || s != (sample{at(100), 50}) {
				t.Fatalf("last = %v, %v; want the new primary's sample", s, ok)
			}
			if _, ok := h.freshAsOf(49); ok {
				t.Error("freshAsOf(49) answered")
			}
			// Without the reset, the old samples' large positions would
			// make a standby at 5000 fresh as of an old time, or break the
			// binary search.
			if got, ok := h.freshAsOf(5000); !ok || !got.Equal(at(100)) {
				t.Errorf("freshAsOf(5000) = %v, %v; want 100ms", got, ok)
			}
			h.add(sample{at(110), 60})
			h.add(sample{at(120), 60})
			if got, ok := h.freshAsOf(55); !ok || !got.Equal(at(100)) {
				t.Errorf("freshAsOf(55) = %v, %v; want 100ms", got, ok)
			}
			if got, ok := h.freshAsOf(60); !ok || !got.Equal(at(120)) {
				t.Errorf("freshAsOf(60) = %v, %v; want 120ms", got, ok)
			}
		})
	}
}

func TestHistorySizeOne(t *testing.T) {
	h := newHistory(1)
	h.add(sample{at(1), 10})
	h.add(sample{at(2), 20})
	if _, ok := h.freshAsOf(15); ok {
		t.Error("freshAsOf(15) answered with only the sample at 20 kept")
	}
	if got, ok := h.freshAsOf(20); !ok || !got.Equal(at(2)) {
		t.Errorf("freshAsOf(20) = %v, %v; want 2ms", got, ok)
	}
}

// TestHistoryMatchesLinearScan compares freshAsOf with a linear scan over
// the samples a reference model keeps, through random additions that wrap
// the ring and reset it.
func TestHistoryMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 7
	h := newHistory(size)
	var model []sample
	lsn := uint64(1000)
	for step := 0; step < 5000; step++ {
		switch r := rng.IntN(20); {
		case r == 0: // a new primary, behind
			lsn = uint64(rng.IntN(int(lsn) + 1))
		case r < 8: // no writes since the last sample
		default:
			lsn += uint64(rng.IntN(50))
		}
		s := sample{at(step), lsn}
		h.add(s)
		if len(model) > 0 && s.lsn < model[len(model)-1].lsn {
			model = nil
		}
		model = append(model, s)
		if len(model) > size {
			model = model[1:]
		}
		if got := contents(h); len(got) != len(model) {
			t.Fatalf("step %d: %d samples, want %d", step, len(got), len(model))
		}
		for probe := 0; probe < 5; probe++ {
			applied := model[0].lsn - 10 + uint64(rng.IntN(int(lsn-model[0].lsn)+30))
			var want time.Time
			wantOK := false
			for _, m := range model {
				if m.lsn <= applied {
					want, wantOK = m.at, true
				}
			}
			got, ok := h.freshAsOf(applied)
			if ok != wantOK || !got.Equal(want) {
				t.Fatalf("step %d: freshAsOf(%d) = %v, %v; want %v, %v (samples %v)", step, applied, got, ok, want, wantOK, model)
			}
		}
	}
}
