package commands

import (
	"context"
	"slices"

	"tierdb/internal/bsonx"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

const (
	// maxBatchBytes keeps a reply under the 16 MiB document limit with room
	// for the envelope.
	maxBatchBytes = 16*1024*1024 - 64*1024
	// maxSortBytes is MongoDB's in-memory sort limit.
	maxSortBytes = exec.MaxMemoryBytes
	// defaultFirstBatch is the number of documents in a first batch when the
	// client names none, as MongoDB does.
	defaultFirstBatch = 101
)

// readSpec is what a find (or the read half of count, update, delete) asks for.
type readSpec struct {
	filter *query.Filter
	empty  bool // the filter matches everything
	// exact means the SQL prefilter selects exactly the matches, so rows
	// need no recheck (and no decoding): a plain {_id: scalar} filter.
	exact bool
	sort  query.Sort
	skip  int64
	limit int64 // 0: none
	proj  *update.Projection
	// naturalDesc: sort {$natural: -1}, newest first on a capped collection.
	naturalDesc bool
}

// isNaturalDesc reports whether a sort is {$natural: -1}.
func isNaturalDesc(sortDoc bson.D) bool {
	if len(sortDoc) != 1 || sortDoc[0].Key != "$natural" {
		return false
	}
	n, ok := asNumber(sortDoc[0].Value)
	return ok && n < 0
}

func parseReadSpec(filter, sortDoc, proj bson.D, skip, limit int64) (*readSpec, error) {
	f, err := query.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	s, err := query.ParseSort(sortDoc)
	if err != nil {
		return nil, err
	}
	rs := &readSpec{filter: f, empty: len(filter) == 0, exact: isIDEquality(filter), sort: s, skip: skip, limit: limit}
	if len(proj) > 0 {
		if rs.proj, err = update.ParseProjection(proj, f); err != nil {
			return nil, err
		}
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	return rs, nil
}

// scanParams is the storage prefilter for the spec.
func (rs *readSpec) scanParams(col *storage.Collection) storage.ScanParams {
	where, args := rs.filter.SQL(col.KeyColumns(), 1)
	return storage.ScanParams{Where: where, Args: args}
}

// newSource picks how to produce the results: a keyset scan in _id order when
// the sort allows it, otherwise everything matching, sorted in memory.
func (h *Handlers) newSource(ctx context.Context, on storage.On, col *storage.Collection, rs *readSpec) (batchSource, error) {
	scan := &scanSource{store: h.store, col: col, spec: rs, params: rs.scanParams(col), node: on.Node}
	_, byID := rs.sort.ByIDOnly()
	if !rs.sort.IsEmpty() && !byID {
		if plan, ok := planIndexSort(col.Indexes, rs.sort, rs.filter.PinnedPaths()); ok {
			src := newOrderedSource(h.store, col, rs, plan, scan.node)
			notePlan(ctx, on, col, rs, src.walkParams(), false)
			return src, nil
		}
	}
	notePlan(ctx, on, col, rs, scan.params, !rs.sort.IsEmpty() && !byID)
	if rs.sort.IsEmpty() {
		// A capped collection's natural order is insertion order.
		scan.params.Natural, scan.params.Desc = true, rs.naturalDesc
		return scan, nil
	}
	if asc, ok := rs.sort.ByIDOnly(); ok {
		scan.params.Desc = !asc
		return scan, nil
	}
	return sortAll(ctx, on, scan, rs)
}

// scanSource walks the collection in _id order in chunks, rechecking every
// row against the filter (the SQL prefilter is only a superset).
type scanSource struct {
	store *storage.Store
	// node is where the cursor's first batch was read: later batches read
	// there too, so a cursor never moves back in time to a staler standby.
	node   *storage.Node
	col    *storage.Collection
	spec   *readSpec
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

func (s *scanSource) next(ctx context.Context, on storage.On, n int) ([]bson.Raw, bool, error) {
	var out []bson.Raw
	s.decoded = s.decoded[:0]
	size := 0
	for {
		if !s.raw && s.spec.limit > 0 && s.emitted >= s.spec.limit {
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
		recheck := !s.spec.empty && !s.spec.exact && !s.rawMatched[0]
		if recheck || s.keepDecoded || (!s.raw && s.spec.proj != nil) {
			var err error
			if doc, err = bsonx.Decode(row.Doc); err != nil {
				return nil, false, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
			}
			if recheck {
				ok, err := s.spec.filter.MatchErr(doc)
				if err != nil {
					return nil, false, err
				}
				if !ok {
					s.pop()
					continue
				}
			}
		}
		if !s.raw && s.skipped < s.spec.skip {
			s.skipped++
			s.pop()
			continue
		}
		raw := bson.Raw(row.Doc)
		if !s.raw && s.spec.proj != nil {
			b, err := projectRaw(s.spec.proj, doc)
			if err != nil {
				return nil, false, err
			}
			raw = b
		}
		if len(out) > 0 && size+elemSize(len(out), raw) > maxBatchBytes {
			return out, false, nil
		}
		s.pop()
		size += elemSize(len(out), raw)
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
	if want > 0 && s.spec.empty && s.spec.skip == 0 {
		// Every row is a result: fetch exactly what the batch needs, plus one
		// so that a batch that ends the results says so.
		chunk = want + 1
	} else if want > 0 {
		chunk = max(want*2, 1000)
	}
	if !s.raw && s.spec.limit > 0 && s.spec.empty && s.spec.skip == 0 {
		chunk = int(min(int64(chunk), s.spec.limit-s.emitted))
	}
	chunk = min(chunk, maxChunk)
	p := s.params
	p.Limit = chunk
	if s.node != nil {
		on.Node = s.node
	}
	s.rawMatched = s.rawMatched[:0]
	var keep func([]byte) bool
	if !s.spec.empty && !s.spec.exact {
		keep = func(doc []byte) bool {
			m, ok := s.spec.filter.MatchRaw(doc)
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

// elemSize is what document doc adds to a reply as element i of its batch
// array: the document, its type byte, and its key (the decimal index and a
// NUL). Small documents are dominated by it: 160,000 documents of 30 bytes
// take 6 MB more than their own bytes.
func elemSize(i int, doc bson.Raw) int {
	n := 1 + len(doc) + 1 // type, document, key's NUL
	for i >= 10 {
		n++
		i /= 10
	}
	return n + 1
}

// sliceSource serves documents already in memory.
type sliceSource struct {
	docs []bson.Raw
}

func (s *sliceSource) next(_ context.Context, _ storage.On, n int) ([]bson.Raw, bool, error) {
	var out []bson.Raw
	size := 0
	for len(s.docs) > 0 && (n <= 0 || len(out) < n) {
		if len(out) > 0 && size+elemSize(len(out), s.docs[0]) > maxBatchBytes {
			break
		}
		size += elemSize(len(out), s.docs[0])
		out = append(out, s.docs[0])
		s.docs = s.docs[1:]
	}
	return out, len(s.docs) == 0, nil
}

// sortAll reads every match, sorts it, then applies skip, limit, projection.
// Documents are sorted by their sort values, read from the BSON bytes when
// the sort's paths reach scalars (query.Sort.RawValues), so most are never
// decoded; what it holds counts as the BSON, the values and any decoded
// document, against MongoDB's 100 MB sort limit. With a limit it keeps only
// the first skip+limit documents seen so far (a top-k), so a sort with a
// small limit holds little whatever it reads.
func sortAll(ctx context.Context, on storage.On, scan *scanSource, rs *readSpec) (batchSource, error) {
	scan.raw = true
	type item struct {
		raw  bson.Raw
		vals []any
		seq  int // arrival order (_id order): ties keep it
		mem  int
	}
	var items []item
	total, seq := 0, 0
	less := func(a, b item) int {
		if c := rs.sort.CompareValues(a.vals, b.vals); c != 0 {
			return c
		}
		return a.seq - b.seq
	}
	keep := 0 // top-k size, 0: everything
	if rs.limit > 0 {
		keep = int(min(rs.skip+rs.limit, 1<<20))
	}
	for {
		batch, done, err := scan.next(ctx, on, 0)
		if err != nil {
			return nil, err
		}
		for _, raw := range batch {
			vals, ok := rs.sort.RawValues(raw)
			mem := len(raw) + 16*len(vals) + 64
			if !ok {
				doc, err := bsonx.Decode(raw)
				if err != nil {
					return nil, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
				}
				vals = rs.sort.Values(doc)
				mem += exec.DocMemory(doc) // its values may be parts of it
			}
			// Its own copy: the scan's rows share blocks that a few kept
			// documents would otherwise pin.
			it := item{raw: append(bson.Raw(nil), raw...), vals: vals, seq: seq, mem: mem}
			seq++
			items = append(items, it)
			total += it.mem
			if keep > 0 && len(items) >= 2*keep+1024 {
				slices.SortFunc(items, less)
				for _, dropped := range items[keep:] {
					total -= dropped.mem
				}
				clear(items[keep:])
				items = items[:keep]
			}
		}
		if total > maxSortBytes {
			return nil, mongoerr.New(mongoerr.QueryExceededMemoryLimit, "Sort exceeded memory limit of 104857600 bytes; add an index or a limit (tierdb cannot spill sorts to disk)")
		}
		if done {
			break
		}
	}
	slices.SortFunc(items, less)
	if rs.skip >= int64(len(items)) {
		items = nil
	} else {
		items = items[rs.skip:]
	}
	if rs.limit > 0 && int64(len(items)) > rs.limit {
		items = items[:rs.limit]
	}
	out := make([]bson.Raw, len(items))
	for i, it := range items {
		out[i] = it.raw
		if rs.proj != nil {
			doc, err := bsonx.Decode(it.raw)
			if err != nil {
				return nil, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
			}
			b, err := projectRaw(rs.proj, doc)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	}
	return &sliceSource{docs: out}, nil
}

// isIDEquality reports whether filter is {_id: v} with v a value whose
// equality in MongoDB is exactly equality of its key (not null, which also
// matches missing; not a document, array or regex, which have matching rules
// of their own; not NaN).
func isIDEquality(filter bson.D) bool {
	if len(filter) != 1 || filter[0].Key != "_id" {
		return false
	}
	switch v := filter[0].Value.(type) {
	case int32, int64, string, bson.ObjectID, bool, bson.DateTime, bson.Timestamp, bson.Binary:
		return true
	case float64:
		return v == v // not NaN
	}
	return false
}
