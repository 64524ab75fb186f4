package bench

import (
	"math"
	"testing"
	"time"
)

// steady is a user answering n operations per SeriesBucket for secs seconds.
func steady(name string, weight float64, n int32, secs int) UserRun {
	s := make([]int32, secs*int(time.Second/SeriesBucket))
	for i := range s {
		s[i] = n
	}
	return UserRun{Name: name, Weight: weight, Series: s, First: 0, Last: float64(secs)}
}

func TestUnfairnessFollowsSeed004(t *testing.T) {
	// Two users at 10 and 30 ops per bucket: H = 20, U_f = 10/20.
	f := fairnessOf([]UserRun{steady("a", 1, 10, 5), steady("b", 1, 30, 5)}, 0)
	if f.Windows != 5 || math.Abs(f.UfMean-0.5) > 1e-9 || math.Abs(f.UfSpan-0.5) > 1e-9 {
		t.Fatalf("got %+v, want 5 windows at U_f 0.5", f)
	}
	if f.MinRate != 100 || f.MaxRate != 300 {
		t.Fatalf("rates %v and %v, want 100 and 300 ops/s", f.MinRate, f.MaxRate)
	}
	// The same throughputs with weights 1 and 3 are exactly fair.
	f = fairnessOf([]UserRun{steady("a", 1, 10, 5), steady("b", 3, 30, 5)}, 0)
	if f.UfMean != 0 || f.UfSpan != 0 {
		t.Fatalf("weighted users: got U_f %v / %v, want 0", f.UfMean, f.UfSpan)
	}
}

func TestFairnessLeavesOutWarmupAndStragglers(t *testing.T) {
	a, b := steady("a", 1, 10, 10), steady("b", 1, 10, 10)
	// b is idle for its first 3 s and stops at 8 s: only 3 s–8 s count,
	// less the 1 s warm-up.
	for i := 0; i < 30; i++ {
		b.Series[i] = 0
	}
	b.First, b.Last = 3, 8
	f := fairnessOf([]UserRun{a, b}, time.Second)
	if f.Windows != 4 || f.UfMean != 0 {
		t.Fatalf("got %+v, want 4 fair windows", f)
	}
	if fairnessOf([]UserRun{a}, 0) != nil {
		t.Fatal("one user has no fairness to measure")
	}
}

func TestUserRunMergesClients(t *testing.T) {
	r1, r2 := newRecorder(false, 1), newRecorder(false, 2)
	r1.record(0, 2*time.Millisecond, nil)
	r2.record(time.Millisecond, 5*time.Millisecond, nil)
	u := userRun("g-u0", "g", 0, []*recorder{r1, r2})
	if u.Ops != 2 || math.Abs(u.MeanUs-3000) > 1 {
		t.Fatalf("got %+v, want 2 ops with a 3 ms mean", u)
	}
	// Latencies 2 and 4 ms: standard deviation 1 ms, CV 1/3.
	if math.Abs(u.CV-1.0/3) > 1e-6 {
		t.Fatalf("CV %v, want 1/3", u.CV)
	}
}

// A perfectly fair split of whole operations still has a U_f: with 13
// operations among 2 users a window, 6 and 7 is the best there is, U_f
// 0.5/6.5; the floor says so, and is 0 where H is whole or weights differ.
func TestUfFloorIsWhatWholeOperationsAllow(t *testing.T) {
	a, b := steady("a", 1, 0, 3), steady("b", 1, 0, 3)
	per := int(FairnessWindow / SeriesBucket)
	for w := 0; w < 3; w++ {
		a.Series[w*per], b.Series[w*per] = 6, 7
	}
	f := fairnessOf([]UserRun{a, b}, 0)
	want := 0.5 / 6.5
	if f.Windows != 3 || math.Abs(f.UfMean-want) > 1e-9 || math.Abs(f.UfFloor-want) > 1e-9 {
		t.Fatalf("6 and 7 a window: U_f %v, floor %v over %d windows; want both %v", f.UfMean, f.UfFloor, f.Windows, want)
	}
	// Three users, 20 operations a window: 6, 7, 7 at best (H 6.67, U_f
	// 0.67/6.67); 4, 8, 8 is further from fair than the floor.
	c := steady("c", 1, 0, 3)
	for w := 0; w < 3; w++ {
		a.Series[w*per], b.Series[w*per], c.Series[w*per] = 4, 8, 8
	}
	f = fairnessOf([]UserRun{a, b, c}, 0)
	if h := 20.0 / 3; math.Abs(f.UfFloor-(2.0/3)/h) > 1e-9 || math.Abs(f.UfMean-(h-4)/h) > 1e-9 {
		t.Fatalf("4, 8, 8: U_f %v, floor %v", f.UfMean, f.UfFloor)
	}
	if f := fairnessOf([]UserRun{steady("a", 1, 10, 5), steady("b", 1, 30, 5)}, 0); f.UfFloor != 0 {
		t.Fatalf("H whole: floor %v, want 0", f.UfFloor)
	}
	if f := fairnessOf([]UserRun{steady("a", 1, 10, 5), steady("b", 3, 30, 5)}, 0); f.UfFloor != 0 {
		t.Fatalf("unequal weights: floor %v, want 0 (not given)", f.UfFloor)
	}
}
