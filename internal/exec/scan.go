package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/storage"
)

// scanSource walks the collection in _id order (or a capped collection in
// insertion order) in chunks, a keyset scan: each chunk starts after the
// last row of the one before, so a cursor holds no PostgreSQL backend
// between batches. Every row is rechecked against the filter (the SQL
// prefilter is only a superset).
type scanSource struct {
	store Store
	// node is where the cursor's first batch was read (nil: the primary):
	// later batches read there too.
	node   *storage.Node
	col    *storage.Collection
	spec   *ReadSpec
	params storage.ScanParams
	// raw disables skip, limit and projection, for callers that post-process.
	raw     bool
	skipped int64
	emitted int64
	// pending holds fetched rows not yet consumed; rawMatched says, for
	// each, whether the filter already matched its BSON bytes.
	pending    []storage.Row
	rawMatched []bool
	done       bool
	// decoded keeps the decoded documents of the last batch, for callers that
	// need them (sorting, updates). Only filled when keepDecoded is set.
	keepDecoded bool
	decoded     []bson.D
}

func (s *scanSource) Next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	var out []bson.Raw
	s.decoded = s.decoded[:0]
	size := 0
	for {
		if !s.raw && s.spec.Limit > 0 && s.emitted >= s.spec.Limit {
			s.done = true
			s.pending, s.rawMatched = nil, nil
		}
		if n > 0 && len(out) >= n {
			return out, s.done && len(s.pending) == 0, nil
		}
		if len(s.pending) == 0 && !s.done {
			if err := s.fetch(ctx, on, n-len(out)); err != nil {
				return nil, false, err
			}
			continue
		}
		if len(s.pending) == 0 {
			return out, true, nil
		}
		row := s.pending[0]
		var doc bson.D
		// Rows the filter refuses on their BSON bytes never got here; those
		// it accepted need no decoding to be rechecked.
		recheck := !s.spec.Empty && !s.spec.Exact && !s.rawMatched[0]
		if recheck || s.keepDecoded || (!s.raw && s.spec.Proj != nil) {
			var err error
			if doc, err = bsonx.Decode(row.Doc); err != nil {
				return nil, false, errCorrupt()
			}
			if recheck {
				ok, err := s.spec.Filter.MatchErr(doc)
				if err != nil {
					return nil, false, err
				}
				if !ok {
					s.pop()
					continue
				}
			}
		}
		if !s.raw && s.skipped < s.spec.Skip {
			s.skipped++
			s.pop()
			continue
		}
		raw := bson.Raw(row.Doc)
		if !s.raw && s.spec.Proj != nil {
			b, err := ProjectRaw(s.spec.Proj, doc)
			if err != nil {
				return nil, false, err
			}
			raw = b
		}
		if len(out) > 0 && size+ElemSize(len(out), raw) > MaxBatchBytes {
			return out, false, nil
		}
		s.pop()
		size += ElemSize(len(out), raw)
		out = append(out, raw)
		if s.keepDecoded {
			s.decoded = append(s.decoded, doc)
		}
		s.emitted++
	}
}

func (s *scanSource) pop() {
	s.pending, s.rawMatched = s.pending[1:], s.rawMatched[1:]
}

// maxChunk bounds the rows one round trip reads, whatever the batch size.
const maxChunk = 5000

// fetch reads the next chunk of candidate rows after the last one read.
// Rows whose BSON bytes fail the filter are dropped as they arrive,
// before they are copied (query.Filter.MatchRaw).
func (s *scanSource) fetch(ctx context.Context, on storage.On, want int) error {
	chunk := maxChunk // no batch bound: a count, a sort reading everything
	if want > 0 && s.spec.Empty && s.spec.Skip == 0 {
		// Every row is a result: fetch exactly what the batch needs, plus one
		// so that a batch that ends the results says so.
		chunk = want + 1
	} else if want > 0 {
		chunk = max(want*2, 1000)
	}
	if !s.raw && s.spec.Limit > 0 && s.spec.Empty && s.spec.Skip == 0 {
		chunk = int(min(int64(chunk), s.spec.Limit-s.emitted))
	}
	chunk = min(chunk, maxChunk)
	p := s.params
	p.Limit = chunk
	if s.node != nil {
		on.Node = s.node
	}
	s.rawMatched = s.rawMatched[:0]
	var keep func([]byte) bool
	if !s.spec.Empty && !s.spec.Exact {
		keep = func(doc []byte) bool {
			m, ok := s.spec.Filter.MatchRaw(doc)
			if ok && !m {
				return false
			}
			s.rawMatched = append(s.rawMatched, ok)
			return true
		}
	}
	ch, err := s.store.ScanChunk(ctx, on, s.col, p, keep)
	if err != nil {
		return err
	}
	if keep == nil {
		s.rawMatched = append(s.rawMatched, make([]bool, len(ch.Rows))...)
	}
	if ch.Read < chunk && !ch.Cut {
		s.done = true
	}
	if ch.Read > 0 {
		s.params.After, s.params.AfterSeq = ch.LastKey, ch.LastSeq
	}
	s.pending = ch.Rows
	return nil
}
