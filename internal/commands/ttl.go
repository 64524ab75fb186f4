package commands

import (
	"context"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/qos"
	"tierdb/internal/query"
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
// competes with high-tier requests. A batch reads at most ttlBatch
// candidates through the TTL index and deletes those still holding the
// bytes they were read with (compare and delete), so a document updated
// meanwhile is judged again at the next pass, and each expired document is
// deleted once, whichever tierdb sharing the database deletes it.
const (
	ttlBatch = 500
	// ttlMaxBatches bounds the work of one index in one pass; the rest
	// waits for the next pass, as MongoDB's monitor bounds its passes.
	ttlMaxBatches = 200
	ttlPrincipal  = "__ttl"
)

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
// expired at now; it returns how many it deleted.
func (h *Handlers) expireIndex(ctx context.Context, t storage.TTLIndex, now time.Time) (int64, error) {
	ix := t.Index
	cutoff := bson.NewDateTimeFromTime(now.Add(-time.Duration(*ix.ExpireAfterSeconds) * time.Second))
	// {field: {$lt: cutoff}} is exactly MongoDB's rule: it matches a date
	// before the cutoff, or an array holding one (the earliest decides),
	// and nothing of another type.
	cond := bson.D{{Key: ix.Keys[0].Field, Value: bson.D{{Key: "$lt", Value: cutoff}}}}
	if len(ix.Partial) > 0 {
		partial, err := bsonx.Decode(ix.Partial)
		if err != nil {
			return 0, err
		}
		cond = bson.D{{Key: "$and", Value: bson.A{partial, cond}}}
	}
	f, err := query.ParseFilter(cond)
	if err != nil {
		return 0, err
	}
	where, args := f.SQL([]query.KeyColumn{t.Col.KeyColumn(ix)}, 1)
	p := storage.ScanParams{Where: where, Args: args, Limit: ttlBatch}
	var deleted int64
	for i := 0; i < ttlMaxBatches; i++ {
		done, err := h.admitBackground(ctx)
		if err != nil {
			return deleted, err
		}
		rows, err := h.store.Scan(ctx, ttlOn, t.Col, p)
		if err != nil {
			done()
			return deleted, err
		}
		var expired []storage.Row
		for _, r := range rows {
			d, err := bsonx.Decode(r.Doc)
			if err == nil && f.Match(d) {
				expired = append(expired, r)
			}
		}
		if len(expired) > 0 {
			n, err := h.store.Delete(ctx, ttlOn, t.Col, expired)
			deleted += n
			h.ttl.deleted.Add(n)
			if err != nil {
				done()
				return deleted, err
			}
		}
		done()
		if len(rows) < ttlBatch {
			break
		}
		p.After = rows[len(rows)-1].Key
	}
	return deleted, nil
}

// admitBackground admits one batch of background work as a low-tier
// request of its own user, through the admission clients go through.
func (h *Handlers) admitBackground(ctx context.Context) (func(), error) {
	release := func() {}
	if h.opts.Admission != nil {
		done, err := h.opts.Admission.Admit(ctx, qos.Low, false)
		if err != nil {
			return nil, err
		}
		release = done
	}
	if h.opts.Fair != nil {
		fdone, err := h.opts.Fair.Admit(ctx, qos.Low, qos.Principal{User: ttlPrincipal, Weight: 1})
		if err != nil {
			release()
			return nil, err
		}
		prev := release
		release = func() { fdone(); prev() }
	}
	return release, nil
}
