package bench

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// worker is one client's loop.
type worker struct {
	g      Group
	wl     *workload
	client *tierClient
	rec    *recorder
	rng    *rand.Rand
	start  time.Time     // the run's start
	stop   chan struct{} // closed when an afterOthers group must stop
	done   *atomic.Int64 // operations answered, for the progress line
	// An S group's writer or reader instead of YCSB operations.
	stampW *stampWriter
	stampR *staleReader
}

func (w *worker) run(ctx context.Context) {
	begin := w.start.Add(w.g.StartAfter.D())
	if !w.sleepUntil(ctx, begin) {
		return
	}
	var deadline time.Time
	if w.g.Duration > 0 {
		deadline = begin.Add(w.g.Duration.D())
	}
	var interval time.Duration
	if w.g.Mode == ModeRate {
		interval = time.Duration(float64(time.Second) / w.g.Rate)
	}
	for i := 0; w.g.Ops == 0 || i < w.g.Ops; i++ {
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return
		}
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		sent := time.Now()
		if interval > 0 {
			// The latency counts from when the operation was due, so a
			// client that falls behind its schedule shows it.
			sent = begin.Add(time.Duration(i) * interval)
			if !w.sleepUntil(ctx, sent) {
				return
			}
		}
		var err error
		read := false
		switch {
		case w.stampW != nil:
			err = w.stampW.write(ctx, w.client)
		case w.stampR != nil:
			err, read = w.stampR.read(ctx, w.client), true
		default:
			op := w.g.Mix.pick(w.rng)
			read = op == opRead || op == opScan
			err = w.wl.do(ctx, w.client.coll, op, w.g.Distribution, w.rng)
		}
		if ctx.Err() != nil {
			return // cut off: the operation did not fail on its own
		}
		if read {
			w.rec.recordRead(sent.Sub(w.start), time.Since(w.start), err)
		} else {
			w.rec.record(sent.Sub(w.start), time.Since(w.start), err)
		}
		w.done.Add(1)
	}
}

// sleepUntil waits for t; false if the run ends first.
func (w *worker) sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}
