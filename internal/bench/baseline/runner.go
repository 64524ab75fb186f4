package baseline

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"tierdb/internal/bench"
)

// runResult is one (operation, target, round) run.
type runResult struct {
	Op         string  `json:"op"`
	Target     string  `json:"target"`
	Round      int     `json:"round"`
	Ops        uint64  `json:"ops"`
	Errors     uint64  `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Seconds    float64 `json:"seconds"`
	OpsPerSec  float64 `json:"opsPerSec"`
	P50us      float64 `json:"p50Us"`
	P99us      float64 `json:"p99Us"`
	P999us     float64 `json:"p999Us"`
	MeanUs     float64 `json:"meanUs"`
	MaxUs      float64 `json:"maxUs"`
	usage
}

// runSpec is everything one run needs.
type runSpec struct {
	op       opKind
	target   target
	round    int
	clients  int
	records  int
	warmup   time.Duration
	duration time.Duration
	// nextID hands out _id values for inserts; one per target, shared by
	// its rounds, so inserted keys never collide.
	nextID *atomic.Int64
	probe  probe
}

// opTimeout bounds how long an operation may run past the end of its run,
// so a hung server fails the benchmark instead of hanging it.
const opTimeout = 30 * time.Second

// runOnce drives spec.op with spec.clients goroutines for warmup+duration.
// Only operations started after the warm-up are measured; throughput is
// measured operations per measured second. Errors are counted, not timed.
func runOnce(ctx context.Context, spec runSpec) runResult {
	start := time.Now()
	measureFrom := start.Add(spec.warmup)
	end := measureFrom.Add(spec.duration)
	ctx, cancel := context.WithDeadline(ctx, end.Add(opTimeout))
	defer cancel()

	hists := make([]bench.Histogram, spec.clients)
	var errs errorTally
	var wg sync.WaitGroup
	for w := range spec.clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(spec.round), uint64(w)))
			for {
				call := spec.prepare(rng)
				t0 := time.Now()
				if !t0.Before(end) || ctx.Err() != nil {
					return
				}
				err := call(ctx)
				d := time.Since(t0)
				switch {
				case err != nil:
					errs.add(err)
				case !t0.Before(measureFrom):
					hists[w].Record(d)
				}
			}
		})
	}
	// Sample CPU use over exactly the measured window.
	sleepUntil(ctx, measureFrom)
	before := spec.probe.snapshot()
	sleepUntil(ctx, end)
	after := spec.probe.snapshot()
	wg.Wait()

	var h bench.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	r := runResult{
		Op:      spec.op.String(),
		Target:  spec.target.name(),
		Round:   spec.round,
		Ops:     h.Count(),
		Seconds: spec.duration.Seconds(),
		P50us:   micros(h.Quantile(0.50)),
		P99us:   micros(h.Quantile(0.99)),
		P999us:  micros(h.Quantile(0.999)),
		MeanUs:  micros(h.Mean()),
		MaxUs:   micros(h.Max()),
		usage:   before.until(after, h.Count()),
	}
	r.OpsPerSec = float64(r.Ops) / r.Seconds
	r.Errors, r.FirstError = errs.get()
	if ctx.Err() != nil && r.Errors == 0 && time.Now().Before(end) {
		r.Errors, r.FirstError = 1, ctx.Err().Error()
	}
	return r
}

// prepare draws the next operation's inputs outside the timed section and
// returns the call to time.
func (s *runSpec) prepare(rng *rand.Rand) func(context.Context) error {
	t := s.target
	switch s.op {
	case opFind:
		id := rng.Int64N(int64(s.records))
		return func(ctx context.Context) error { return t.find(ctx, id) }
	case opInsert:
		id := s.nextID.Add(1) - 1
		f := randomFields(rng)
		return func(ctx context.Context) error { return t.insert(ctx, id, &f) }
	default:
		var id int64 // opUpdateHot: all on record 0
		if s.op == opUpdate {
			id = rng.Int64N(int64(s.records))
		}
		v := randomString(rng, fieldLen)
		return func(ctx context.Context) error { return t.update(ctx, id, v) }
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// errorTally counts errors from many goroutines and keeps the first.
type errorTally struct {
	mu    sync.Mutex
	n     uint64
	first string
}

func (e *errorTally) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		e.first = err.Error()
	}
	e.n++
}

func (e *errorTally) get() (uint64, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.first
}
