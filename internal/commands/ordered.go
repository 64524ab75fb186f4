package commands

import (
	"bytes"
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// orderedSource serves a sort from an index (planIndexSort): the rows
// whose key column is set come from PostgreSQL already in order, a keyset
// walk of the column's btree in chunks, so a sort with a limit reads
// little more than the limit. The rows whose column is NULL (documents
// multikey on the index, whose sort value is an array's smallest or
// largest element) are read first, sorted in memory and merged in, so the
// result is the in-memory sort's (sortAll's) whatever the documents hold.
type orderedSource struct {
	store *storage.Store
	node  *storage.Node
	col   *storage.Collection
	spec  *readSpec
	plan  sortPlan
	// params is the prefilter; the walk's position lives in it. The walk
	// itself uses walkWhere and walkArgs instead of its Where and Args.
	params    storage.ScanParams
	walkWhere string
	walkArgs  []any
	// raw disables skip, limit and projection (callers that post-process);
	// keepDecoded fills decoded with the documents of the last batch.
	raw         bool
	keepDecoded bool
	decoded     []bson.D
	// limitHint is how many rows the caller expects to take at most (an
	// aggregate's $limit after the $sort), 0 when unknown: it sizes the
	// first chunk.
	limitHint int64

	started    bool
	mem        []sortItem // multikey rows, sorted, not yet emitted
	pending    []sortItem // walked rows, in order, not yet emitted
	streamDone bool
	walkAfter  []byte // the key column of the last walked row
	skipped    int64
	emitted    int64
}

type sortItem struct {
	raw bson.Raw
	doc bson.D // nil until needed
	id  []byte
}

func newOrderedSource(s *storage.Store, col *storage.Collection, rs *readSpec, plan sortPlan, node *storage.Node) *orderedSource {
	src := &orderedSource{store: s, col: col, spec: rs, plan: plan, params: rs.scanParams(col), node: node}
	// The walk reads only rows whose column is set, so the prefilter on
	// that column need not let NULLs through, and a range on it (a pinned
	// prefix) then bounds the btree walk.
	src.walkWhere, src.walkArgs = rs.filter.SQL(col.WalkKeyColumns(plan.index.Column), 1)
	return src
}

// order is the params of the walk (null: of the multikey rows).
func (s *orderedSource) order(null bool) *storage.KeyOrder {
	o := &storage.KeyOrder{Column: s.plan.index.Column, Desc: s.plan.desc, IDDesc: s.plan.idDesc, Null: null}
	if !null {
		o.After = s.walkAfter
	}
	return o
}

// walkParams are the params of the walk's first chunk, as explain shows
// them.
func (s *orderedSource) walkParams() storage.ScanParams {
	p := s.params
	p.Where, p.Args = s.walkWhere, s.walkArgs
	p.Order = s.order(false)
	p.Limit = s.nextChunk(0)
	return p
}

// cmp orders two rows as the in-memory sort does: by the sort, then by _id
// (the order a stable sort of an _id-ordered scan leaves ties in).
func (s *orderedSource) cmp(a, b sortItem) int {
	if c := s.spec.sort.Compare(a.doc, b.doc); c != 0 {
		return c
	}
	c := bytes.Compare(a.id, b.id)
	if s.plan.idDesc {
		return -c
	}
	return c
}

func (s *orderedSource) limited() bool { return !s.raw && s.spec.limit > 0 }

func (s *orderedSource) next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	if s.node != nil {
		on.Node = s.node
	}
	if !s.started {
		if err := s.loadMultikey(ctx, on); err != nil {
			return nil, false, err
		}
		s.started = true
	}
	var out []bson.Raw
	s.decoded = s.decoded[:0]
	size := 0
	for {
		if s.limited() && s.emitted >= s.spec.limit {
			s.mem, s.pending, s.streamDone = nil, nil, true
		}
		if n > 0 && len(out) >= n {
			return out, s.exhausted(), nil
		}
		if len(s.pending) == 0 && !s.streamDone {
			if err := s.fetch(ctx, on, n-len(out)); err != nil {
				return nil, false, err
			}
			continue
		}
		fromMem := len(s.pending) == 0 || (len(s.mem) > 0 && s.cmp(s.mem[0], s.pending[0]) < 0)
		var it sortItem
		if fromMem {
			if len(s.mem) == 0 {
				return out, true, nil
			}
			it = s.mem[0]
		} else {
			it = s.pending[0]
		}
		if !s.raw && s.skipped < s.spec.skip {
			s.skipped++
			s.pop(fromMem)
			continue
		}
		raw := it.raw
		if !s.raw && s.spec.proj != nil {
			doc, err := it.decode()
			if err != nil {
				return nil, false, err
			}
			if raw, err = projectRaw(s.spec.proj, doc); err != nil {
				return nil, false, err
			}
		}
		if len(out) > 0 && size+elemSize(len(out), raw) > maxBatchBytes {
			return out, false, nil
		}
		if s.keepDecoded {
			doc, err := it.decode()
			if err != nil {
				return nil, false, err
			}
			s.decoded = append(s.decoded, doc)
		}
		s.pop(fromMem)
		size += elemSize(len(out), raw)
		out = append(out, raw)
		s.emitted++
	}
}

func (s *orderedSource) exhausted() bool {
	return s.streamDone && len(s.pending) == 0 && len(s.mem) == 0
}

func (s *orderedSource) pop(fromMem bool) {
	if fromMem {
		s.mem[0] = sortItem{}
		s.mem = s.mem[1:]
	} else {
		s.pending[0] = sortItem{}
		s.pending = s.pending[1:]
	}
}

func (it *sortItem) decode() (bson.D, error) {
	if it.doc == nil {
		d, err := bsonx.Decode(it.raw)
		if err != nil {
			return nil, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
		}
		it.doc = d
	}
	return it.doc, nil
}

// keep decodes a row and rechecks it against the filter (the prefilter is
// only a superset).
func (s *orderedSource) keep(it *sortItem) (bool, error) {
	doc, err := it.decode()
	if err != nil {
		return false, err
	}
	if s.spec.empty || s.spec.exact {
		return true, nil
	}
	return s.spec.filter.MatchErr(doc)
}

// loadMultikey reads every matching row whose key column is NULL and sorts
// it, keeping only what the limit can reach; what it holds counts against
// the sort memory limit, as sortAll's does.
func (s *orderedSource) loadMultikey(ctx context.Context, on storage.On) error {
	keep := 0
	if s.limited() {
		keep = int(min(s.spec.skip+s.spec.limit, 1<<20))
	} else if s.limitHint > 0 {
		keep = int(min(s.limitHint, 1<<20))
	}
	p := s.params
	p.Order = s.order(true)
	p.Limit = 1000
	total := 0
	for {
		ch, err := s.store.ScanChunk(ctx, on, s.col, p, nil)
		if err != nil {
			return err
		}
		for _, r := range ch.Rows {
			it := sortItem{raw: r.Doc, id: r.Key}
			ok, err := s.keep(&it)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			// Own copies: the scan's rows share blocks that a few kept
			// rows would otherwise pin.
			it.raw, it.id = append(bson.Raw(nil), it.raw...), append([]byte(nil), it.id...)
			s.mem = append(s.mem, it)
			total += len(it.raw) + exec.DocMemory(it.doc)
			if keep > 0 && len(s.mem) >= 2*keep+1024 {
				slices.SortFunc(s.mem, s.cmp)
				for _, dropped := range s.mem[keep:] {
					total -= len(dropped.raw) + exec.DocMemory(dropped.doc)
				}
				clear(s.mem[keep:])
				s.mem = s.mem[:keep]
			}
		}
		if total > maxSortBytes {
			return mongoerr.New(mongoerr.QueryExceededMemoryLimit, "Sort exceeded memory limit of 104857600 bytes; add an index or a limit (tierdb cannot spill sorts to disk)")
		}
		if ch.Read < p.Limit && !ch.Cut {
			break
		}
		p.After = ch.LastKey
	}
	slices.SortFunc(s.mem, s.cmp)
	if keep > 0 && len(s.mem) > keep {
		clear(s.mem[keep:])
		s.mem = s.mem[:keep]
	}
	return nil
}

// fetch walks the next chunk of the index. want is what the batch still
// needs (0: no bound).
func (s *orderedSource) fetch(ctx context.Context, on storage.On, want int) error {
	chunk := s.nextChunk(want)
	p := s.params
	p.Where, p.Args = s.walkWhere, s.walkArgs
	p.Order = s.order(false)
	p.Limit = chunk
	ch, err := s.store.ScanChunk(ctx, on, s.col, p, nil)
	if err != nil {
		return err
	}
	if ch.Read < chunk && !ch.Cut {
		s.streamDone = true
	}
	if ch.Read > 0 {
		s.params.After, s.walkAfter = ch.LastKey, ch.LastOrderKey
	}
	needDoc := !s.spec.empty && !s.spec.exact || len(s.mem) > 0
	s.pending = s.pending[:0]
	for _, r := range ch.Rows {
		it := sortItem{raw: r.Doc, id: r.Key}
		if needDoc {
			ok, err := s.keep(&it)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		s.pending = append(s.pending, it)
	}
	return nil
}

// nextChunk is how many rows the next chunk of the walk reads: what the
// batch and the limit still want, doubled when rows may fail the recheck,
// plus one that tells whether the walk ends; at most 1000.
func (s *orderedSource) nextChunk(want int) int {
	left := int64(0) // rows the query can still take, 0: unknown
	switch {
	case s.limited():
		left = s.spec.skip - s.skipped + s.spec.limit - s.emitted
	case s.limitHint > 0:
		left = max(s.limitHint-s.emitted, 1)
	}
	chunk := 1000
	if want > 0 {
		chunk = want
	}
	if left > 0 && left < int64(chunk) {
		chunk = int(left)
	}
	if !s.spec.empty && !s.spec.exact {
		chunk = max(chunk*2, 64) // some rows may fail the recheck
	}
	return min(chunk+1, 1000) // one more says whether the walk ends
}
