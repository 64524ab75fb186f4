package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHeadroom is how far the heap may grow past the live heap before
// a collection: 128 MiB.
const DefaultHeadroom = 128 << 20

// DeferHold is how long after the high tier's last request collections
// stay deferred (SetHighActive).
const DeferHold = time.Second

// deferFactor multiplies the headroom while collections are deferred: 512
// MiB at the default, eight seconds of fig5-paper's allocation (60 MB/s).
// Its time-sensitive phase of 15,000 updates lasts about nine, so one
// collection falls near its end.
const deferFactor = 4

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
	hold     time.Duration

	// active and ended (Unix ns) are the high tier's state as last told;
	// deferring is whether the larger headroom is in force. SetHighActive
	// stores active before it loads deferring, and endDefer stores
	// deferring before it loads active, so one of them always sees the
	// other.
	active    atomic.Bool
	ended     atomic.Int64
	deferring atomic.Bool
	deferrals atomic.Int64

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
	t := &Tuner{headroom: headroom, hold: DeferHold, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
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
		t.deferring.Store(false)
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
	t.setLocked(false)
	return true
}

// setLocked sets the percentage from the live heap and the headroom in
// force; small changes are not worth the runtime's recomputation of its
// pace unless force.
func (t *Tuner) setLocked(force bool) {
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	headroom := t.headroom
	if t.deferring.Load() {
		headroom *= deferFactor
	}
	p := Percent(live, headroom)
	if old := t.percent; !force && old != 0 && p*10 > old*9 && p*10 < old*11 {
		return
	}
	t.percent = p
	debug.SetGCPercent(p)
}

// SetHighActive tells the tuner whether high-tier requests are in process
// (qos.Channel.OnHighActive). From the high tier's first request until
// DeferHold after its last, the heap may grow by deferFactor times the
// headroom before a collection, so that collections fall in the high tier's
// pauses rather than in its requests; when the hold ends the usual headroom
// is back and a heap already past it is collected then. A high tier that
// never pauses sees collections a quarter as often, and the heap stays
// within live + 4 × headroom.
//
// It is called at every flip (twice per request of a back-to-back client):
// two atomics and a clock read, unless the deferral starts.
func (t *Tuner) SetHighActive(active bool) {
	if t == nil {
		return
	}
	if !active {
		t.ended.Store(time.Now().UnixNano())
		t.active.Store(false)
		return
	}
	t.active.Store(true)
	if !t.deferring.Load() {
		t.startDefer()
	}
}

func (t *Tuner) startDefer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.deferring.Load() {
		return
	}
	t.deferring.Store(true)
	t.deferrals.Add(1)
	t.setLocked(true)
	time.AfterFunc(t.hold, t.endDefer)
}

// endDefer ends the deferral once the hold has passed since the high
// tier's last request, or looks again when it would have.
func (t *Tuner) endDefer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	wait := t.hold
	if !t.active.Load() {
		wait -= time.Since(time.Unix(0, t.ended.Load()))
	}
	if wait > 0 {
		time.AfterFunc(wait, t.endDefer)
		return
	}
	t.deferring.Store(false)
	if t.active.Load() { // a request came as the hold ended
		t.deferring.Store(true)
		time.AfterFunc(t.hold, t.endDefer)
		return
	}
	t.setLocked(true)
}

// Status describes the pacing (serverStatus).
type Status struct {
	Paced   bool // false when GOGC was set: the runtime's own pacing
	Percent int
	// HeadroomMiB is the headroom in force: the larger one while
	// collections wait for the high tier.
	HeadroomMiB int64
	// Deferring: collections wait for the high tier now; Deferrals counts
	// the spells of it.
	Deferring bool
	Deferrals int64
}

// Status reports the pacing; a nil Tuner (GOGC set) is not paced.
func (t *Tuner) Status() Status {
	if t == nil {
		return Status{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := Status{Paced: true, Percent: t.percent, HeadroomMiB: int64(t.headroom >> 20), Deferring: t.deferring.Load(), Deferrals: t.deferrals.Load()}
	if st.Deferring {
		st.HeadroomMiB *= deferFactor
	}
	return st
}
