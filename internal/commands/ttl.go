package commands

import (
	"context"
	"sync/atomic"
	"time"

	"tierdb/internal/exec"
	"tierdb/internal/qos"
	"tierdb/internal/storage"
)

// The TTL monitor deletes the documents of TTL indexes whose date has
// passed, as MongoDB's does: every TTLInterval (60 s by default), a pass
// looks at each TTL index and deletes the documents whose indexed field is
// a date (or an array holding a date) earlier than now minus
// expireAfterSeconds, and that match the index's partial filter.
//
// It is low-tier background work: each batch is admitted like a low-tier
// client request (priority channel, then the fair gate, as the user
// "__ttl"), and runs on the low tier's PostgreSQL backends, so it never
// competes with high-tier requests. The scan-and-delete of each index is
// exec.Expiry: a batch reads at most exec.ExpiryBatch candidates through
// the TTL index and deletes those still holding the bytes they were read
// with (compare and delete), so a document updated meanwhile is judged
// again at the next pass, and each expired document is deleted once,
// whichever tierdb sharing the database deletes it.
const ttlPrincipal = "__ttl"

// ttlStats count the monitor's work (MongoDB's metrics.ttl).
type ttlStats struct {
	passes, deleted atomic.Int64
}

// runTTL runs expiry passes until Close.
func (h *Handlers) runTTL(interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-h.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.expirePass(ctx)
		cancel()
	}
}

// ttlOn is where the TTL monitor works: on the low tier's backends.
var ttlOn = storage.At(qos.Low)

// expirePass expires what every TTL index holds past its time.
func (h *Handlers) expirePass(ctx context.Context) {
	ttls, err := h.store.TTLIndexes(ctx, ttlOn)
	if err != nil {
		h.log.Warn("TTL monitor: listing TTL indexes failed", "err", err)
		return
	}
	for _, t := range ttls {
		n, err := h.expireIndex(ctx, t, time.Now())
		if n > 0 {
			h.log.Debug("TTL monitor deleted expired documents", "ns", t.Col.Namespace(), "index", t.Index.Name, "deleted", n)
		}
		if err != nil && ctx.Err() == nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
			h.log.Warn("TTL monitor: expiry failed", "ns", t.Col.Namespace(), "index", t.Index.Name, "err", err)
		}
		if ctx.Err() != nil {
			return
		}
	}
	h.ttl.passes.Add(1)
}

// expireIndex deletes, batch by batch, the documents of one TTL index
// expired at now (exec.Expiry), each batch admitted as background work;
// it returns how many it deleted.
func (h *Handlers) expireIndex(ctx context.Context, t storage.TTLIndex, now time.Time) (int64, error) {
	e := &exec.Expiry{Store: h.store, On: ttlOn, TTL: t, Admit: h.admitBackground, Deleted: func(n int64) { h.ttl.deleted.Add(n) }}
	return e.Run(ctx, now)
}

// admitBackground admits one batch of background work as a low-tier
// request of its own user, through the admission clients go through.
func (h *Handlers) admitBackground(ctx context.Context) (func(), error) {
	release := func() {}
	if h.opts.Admission != nil {
		entry, err := h.opts.Admission.Admit(ctx, qos.Low, false)
		if err != nil {
			return nil, err
		}
		release = entry.Done
	}
	if h.opts.Fair != nil {
		fair, err := h.opts.Fair.Admit(ctx, qos.Low, qos.Principal{User: ttlPrincipal, Weight: 1}, time.Now())
		if err != nil {
			release()
			return nil, err
		}
		prev := release
		release = func() { fair.Done(); prev() }
	}
	return release, nil
}
