package exec

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// Expiry bounds: a batch reads at most ExpiryBatch candidates through the
// TTL index; one index's pass runs at most ExpiryMaxBatches batches, the
// rest waiting for the next pass, as MongoDB's monitor bounds its passes.
const (
	ExpiryBatch      = 500
	ExpiryMaxBatches = 200
)

// Expiry is the TTL monitor's work on one TTL index: it deletes the
// documents whose indexed field is a date (or an array holding a date)
// earlier than now minus expireAfterSeconds, and that match the index's
// partial filter, batch by batch. Each batch deletes the candidates still
// holding the bytes they were read with (compare and delete), so a
// document updated meanwhile is judged again at the next pass.
type Expiry struct {
	Store Store
	On    storage.On
	TTL   storage.TTLIndex
	// Admit, when set, admits one batch (the handler's admission of
	// background work); the func it returns releases it.
	Admit func(ctx context.Context) (func(), error)
	// Deleted, when set, is told how many documents each batch deleted.
	Deleted func(n int64)
	// Batch is the batch size, ExpiryBatch when 0 (tests make it small).
	Batch int
}

// Run deletes what expired at now; it returns how many it deleted.
func (e *Expiry) Run(ctx context.Context, now time.Time) (int64, error) {
	ix, col := e.TTL.Index, e.TTL.Col
	batch := e.Batch
	if batch <= 0 {
		batch = ExpiryBatch
	}
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
	where, args := f.SQL([]query.KeyColumn{col.KeyColumn(ix)}, 1)
	p := storage.ScanParams{Where: where, Args: args, Limit: batch}
	var deleted int64
	for i := 0; i < ExpiryMaxBatches; i++ {
		done := func() {}
		if e.Admit != nil {
			if done, err = e.Admit(ctx); err != nil {
				return deleted, err
			}
		}
		rows, err := scanAll(ctx, e.Store, e.On, col, p)
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
			n, err := e.Store.Delete(ctx, e.On, col, expired)
			deleted += n
			if e.Deleted != nil {
				e.Deleted(n)
			}
			if err != nil {
				done()
				return deleted, err
			}
		}
		done()
		if len(rows) < batch {
			break
		}
		p.After = rows[len(rows)-1].Key
	}
	return deleted, nil
}

// scanAll reads every row p selects (up to p.Limit) chunk by chunk, in _id
// order, as storage.Store.Scan does.
func scanAll(ctx context.Context, st Store, on storage.On, col *storage.Collection, p storage.ScanParams) ([]storage.Row, error) {
	var out []storage.Row
	for {
		ch, err := st.ScanChunk(ctx, on, col, p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ch.Rows...)
		if !ch.Cut {
			return out, nil
		}
		if p.Limit > 0 {
			p.Limit -= ch.Read
		}
		p.After, p.AfterSeq = ch.LastKey, ch.LastSeq
	}
}
