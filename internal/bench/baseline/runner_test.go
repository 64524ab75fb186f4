package baseline

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTarget records what the runner asks of it; every third find fails.
type fakeTarget struct {
	mu       sync.Mutex
	inserted map[int64]int
	finds    atomic.Int64
	maxID    atomic.Int64
}

func (f *fakeTarget) name() string                                         { return "fake" }
func (f *fakeTarget) preload(context.Context, int, *rand.Rand) error       { return nil }
func (f *fakeTarget) update(ctx context.Context, id int64, _ string) error { return f.find(ctx, id) }
func (f *fakeTarget) close(context.Context)                                {}

func (f *fakeTarget) find(_ context.Context, id int64) error {
	for {
		m := f.maxID.Load()
		if id <= m || f.maxID.CompareAndSwap(m, id) {
			break
		}
	}
	if f.finds.Add(1)%3 == 0 {
		return errors.New("not found")
	}
	return nil
}

func (f *fakeTarget) insert(_ context.Context, id int64, fl *fields) error {
	if len(fl[0]) != fieldLen {
		return errors.New("short field")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inserted[id]++
	return nil
}

func spec(op opKind, t target, next *atomic.Int64) runSpec {
	return runSpec{
		op: op, target: t, round: 1, clients: 4, records: 50,
		warmup: 10 * time.Millisecond, duration: 50 * time.Millisecond,
		nextID: next, probe: probe{tierdbPID: os.Getpid(), postmasterPID: os.Getpid()},
	}
}

func TestInsertIDsAreUniqueAndAfterThePreload(t *testing.T) {
	f := &fakeTarget{inserted: map[int64]int{}}
	next := &atomic.Int64{}
	next.Store(50)
	r := runOnce(context.Background(), spec(opInsert, f, next))
	r2 := runOnce(context.Background(), spec(opInsert, f, next))
	if r.Errors+r2.Errors != 0 {
		t.Fatalf("errors: %s %s", r.FirstError, r2.FirstError)
	}
	for id, n := range f.inserted {
		if n != 1 || id < 50 {
			t.Fatalf("_id %d inserted %d times (ids must be unique and ≥ the preloaded 50)", id, n)
		}
	}
	// Warm-up operations are not counted, so fewer are measured than run.
	if r.Ops == 0 || r.Ops+r2.Ops > uint64(len(f.inserted)) {
		t.Errorf("measured %d+%d ops of %d inserted", r.Ops, r2.Ops, len(f.inserted))
	}
	if r.OpsPerSec != float64(r.Ops)/0.05 {
		t.Errorf("ops/s %v for %d ops in 50ms", r.OpsPerSec, r.Ops)
	}
}

func TestErrorsAreCountedNotTimed(t *testing.T) {
	f := &fakeTarget{}
	r := runOnce(context.Background(), spec(opFind, f, nil))
	if r.Errors == 0 || r.FirstError != "not found" {
		t.Fatalf("errors %d, first %q", r.Errors, r.FirstError)
	}
	total := uint64(f.finds.Load())
	if r.Ops+r.Errors > total || r.Ops > total-total/3 {
		t.Errorf("%d timed + %d errors out of %d calls, a third of which failed", r.Ops, r.Errors, total)
	}
	if m := f.maxID.Load(); m >= 50 {
		t.Errorf("find asked for _id %d, beyond the 50 preloaded records", m)
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := spec(opFind, &fakeTarget{}, nil)
	s.duration = time.Hour // must not be waited for
	r := runOnce(ctx, s)
	if r.Ops != 0 {
		t.Errorf("measured %d ops after cancel", r.Ops)
	}
}
