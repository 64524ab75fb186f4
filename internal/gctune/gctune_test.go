package gctune

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{8 << 20, 128 << 20, 1600},  // a small live heap: rare collections
		{100 << 20, 128 << 20, 128}, // headroom past live
		{512 << 20, 128 << 20, 100}, // never less than the default doubling
		{0, 128 << 20, 3200},        // before the first collection: the runtime's 4 MB
		{6 << 20, 10 << 20, 167},    // rounded up
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

func readUint(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitPercent waits for the finalizer that runs after a collection.
func waitPercent(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := int(readUint("/gc/gogc:percent"))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", got, want)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

var keep [][]byte

func TestTunerFollowsLiveHeap(t *testing.T) {
	const headroom = 64 << 20
	tu := start(headroom)
	t.Cleanup(tu.Stop)
	runtime.GC()
	live := readUint("/gc/heap/live:bytes")
	waitPercent(t, Percent(live, headroom))

	// Fewer collections than the default while garbage is made: 32 MiB of
	// garbage fits in the headroom, where GOGC=100 would collect at every
	// doubling of a few MB.
	before := readUint("/gc/cycles/total:gc-cycles")
	for range 32 << 10 {
		keep = append(keep[:0], make([]byte, 1<<10))
	}
	if n := readUint("/gc/cycles/total:gc-cycles") - before; n > 1 {
		t.Errorf("%d collections for 32 MiB of garbage with %d MiB of headroom", n, headroom>>20)
	}

	// A larger live heap lowers the percentage after the next collection.
	small := tu.Percent()
	for range 96 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC()
	live = readUint("/gc/heap/live:bytes")
	want := Percent(live, headroom)
	if want >= small {
		t.Fatalf("live heap %d MiB: percentage %d not below %d", live>>20, want, small)
	}
	waitPercent(t, want)
	keep = nil

	tu.Stop()
	waitPercent(t, 100)
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := readUint("/gc/gogc:percent"); got != 100 {
		t.Errorf("after Stop GOGC is %d, want 100", got)
	}
}

func TestStartLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "100")
	if tu := Start(DefaultHeadroom); tu != nil {
		tu.Stop()
		t.Fatal("Start with GOGC set returned a tuner")
	}
	if got := readUint("/gc/gogc:percent"); got != 100 {
		t.Errorf("GOGC is %d, want 100", got)
	}
}

func TestHighTierDefersCollections(t *testing.T) {
	const headroom = 64 << 20
	tu := start(headroom)
	tu.hold = 100 * time.Millisecond // a sleep below would have to last 20 times as long to end it
	t.Cleanup(tu.Stop)
	runtime.GC()
	live := readUint("/gc/heap/live:bytes")
	normal, deferred := Percent(live, headroom), Percent(live, deferFactor*headroom)
	waitPercent(t, normal)

	// A back-to-back high-tier client: the deferral starts at its first
	// request and outlasts the hold while it keeps coming.
	tu.SetHighActive(true)
	if !tu.Status().Deferring {
		t.Fatal("not deferring while the high tier is active")
	}
	waitPercent(t, deferred)
	for range 40 { // 200 ms, twice the hold
		tu.SetHighActive(false)
		time.Sleep(5 * time.Millisecond)
		tu.SetHighActive(true)
	}
	if st := tu.Status(); !st.Deferring || st.Percent != deferred || st.Deferrals != 1 || st.HeadroomMiB != deferFactor*headroom>>20 {
		t.Fatalf("after 200 ms of requests %+v, want one deferral at %d%%", st, deferred)
	}

	// The hold ends after the last request and the headroom is back.
	tu.SetHighActive(false)
	waitPercent(t, normal)
	if tu.Status().Deferring {
		t.Error("still deferring after the hold")
	}

	// Stop ends a deferral in force.
	tu.SetHighActive(true)
	waitPercent(t, deferred)
	tu.Stop()
	waitPercent(t, 100)
	if tu.Status().Deferring {
		t.Error("deferring after Stop")
	}
	tu.SetHighActive(true)
	time.Sleep(2 * tu.hold)
	if got := readUint("/gc/gogc:percent"); got != 100 {
		t.Errorf("after Stop GOGC is %d, want 100", got)
	}
}
