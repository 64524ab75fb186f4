package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeadroom is how far the heap may grow past the live heap before
// a collection: 128 MiB.
const DefaultHeadroom = 128 << 20

// minHeap is the runtime's own smallest heap goal, 4 MB: the live heap
// counts as at least that.
const minHeap = 4 << 20

// Percent is the GOGC percentage that lets the heap grow by headroom bytes
// past live before the next collection, and at least by GOGC=100's doubling.
func Percent(live, headroom uint64) int {
	live = max(live, minHeap) // 0 before the first collection
	return max(100, int((headroom*100+live-1)/live))
}

// Tuner adjusts the collector's percentage after every collection.
type Tuner struct {
	headroom uint64

	mu      sync.Mutex // orders adjust against Stop and Percent
	percent int
	stopped bool
	sample  []metrics.Sample
}

// Start paces the collector with headroom (see the package comment), unless
// GOGC is set in the environment: then it returns nil and changes nothing.
// The percentage is set now and after each collection.
func Start(headroom uint64) *Tuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return start(headroom)
}

func start(headroom uint64) *Tuner {
	t := &Tuner{headroom: headroom, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.adjust()
	t.arm()
	return t
}

// Stop ends the pacing and restores the runtime's default percentage (100).
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(100)
	}
}

// Percent is the percentage last set (0 before any).
func (t *Tuner) Percent() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// arm sets a finalizer on a fresh object: the runtime runs it after the
// next collection that finds the object unreachable, which is the next
// collection.
func (t *Tuner) arm() {
	s := new([64]byte) // not a tiny allocation, so it is collected alone
	runtime.SetFinalizer(s, func(*[64]byte) {
		if t.adjust() {
			t.arm()
		}
	})
}

// adjust sets the percentage from the live heap; false once stopped.
func (t *Tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := Percent(live, t.headroom)
	// Small changes are not worth the runtime's recomputation of its pace.
	if old := t.percent; old != 0 && p*10 > old*9 && p*10 < old*11 {
		return true
	}
	t.percent = p
	debug.SetGCPercent(p)
	return true
}
