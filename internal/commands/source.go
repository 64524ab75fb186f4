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
func (h *Handlers) newSource(ctx context.Context, col *storage.Collection, rs *readSpec) (batchSource, error) {
	scan := &scanSource{store: h.store, col: col, spec: rs, params: rs.scanParams(col), node: storage.NodeFrom(ctx)}
	_, byID := rs.sort.ByIDOnly()
	notePlan(ctx, col, rs, scan.params, !rs.sort.IsEmpty() && !byID)
	if rs.sort.IsEmpty() {
		// A capped collection's natural order is insertion order.
		scan.params.Natural, scan.params.Desc = true, rs.naturalDesc
		return scan, nil
	}
	if asc, ok := rs.sort.ByIDOnly(); ok {
		scan.params.Desc = !asc
		return scan, nil
	}
	return sortAll(ctx, scan, rs)
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
	// pending holds fetched rows not yet consumed.
	pending []storage.Row
	done    bool
	// decoded keeps the decoded documents of the last batch, for callers that
	// need them (sorting, updates). Only filled when keepDecoded is set.
	keepDecoded bool
	decoded     []bson.D
}

func (s *scanSource) next(ctx context.Context, n int) ([]bson.Raw, bool, error) {
	var out []bson.Raw
	s.decoded = s.decoded[:0]
	size := 0
	for {
		if !s.raw && s.spec.limit > 0 && s.emitted >= s.spec.limit {
			s.done = true
			s.pending = nil
		}
		if n > 0 && len(out) >= n {
			return out, s.done && len(s.pending) == 0, nil
		}
		if len(s.pending) == 0 && !s.done {
			if err := s.fetch(ctx, n-len(out)); err != nil {
				return nil, false, err
			}
		}
		if len(s.pending) == 0 {
			return out, true, nil
		}
		row := s.pending[0]
		var doc bson.D
		recheck := !s.spec.empty && !s.spec.exact
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
					s.pending = s.pending[1:]
					continue
				}
			}
		}
		if !s.raw && s.skipped < s.spec.skip {
			s.skipped++
			s.pending = s.pending[1:]
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
		s.pending = s.pending[1:]
		size += elemSize(len(out), raw)
		out = append(out, raw)
		if s.keepDecoded {
			s.decoded = append(s.decoded, doc)
		}
		s.emitted++
	}
}

// fetch reads the next chunk of candidate rows after the last one read.
func (s *scanSource) fetch(ctx context.Context, want int) error {
	chunk := 1000
	if want > 0 && s.spec.empty && s.spec.skip == 0 {
		// Every row is a result: fetch exactly what the batch needs, plus one
		// so that a batch that ends the results says so.
		chunk = want + 1
	} else if want > 0 {
		chunk = max(want*2, 128)
	}
	if !s.raw && s.spec.limit > 0 && s.spec.empty && s.spec.skip == 0 {
		chunk = int(min(int64(chunk), s.spec.limit-s.emitted))
	}
	p := s.params
	p.Limit = chunk
	if s.node != nil {
		ctx = storage.OnNode(ctx, s.node)
	}
	rows, err := s.store.Scan(ctx, s.col, p)
	if err != nil {
		return err
	}
	if len(rows) < chunk {
		s.done = true
	}
	if len(rows) > 0 {
		s.params.After = rows[len(rows)-1].Key
		s.params.AfterSeq = rows[len(rows)-1].Seq
	}
	s.pending = rows
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

func (s *sliceSource) next(_ context.Context, n int) ([]bson.Raw, bool, error) {
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
// What it holds counts as both forms of each document, the BSON and the
// decoded one the comparison needs, against MongoDB's 100 MB sort limit.
// With a limit it keeps only the first skip+limit documents seen so far (a
// top-k), so a sort with a small limit holds little whatever it reads.
func sortAll(ctx context.Context, scan *scanSource, rs *readSpec) (batchSource, error) {
	scan.raw = true
	scan.keepDecoded = true
	type item struct {
		raw bson.Raw
		doc bson.D
		mem int
	}
	var items []item
	total := 0
	less := func(a, b item) int { return rs.sort.Compare(a.doc, b.doc) }
	keep := 0 // top-k size, 0: everything
	if rs.limit > 0 {
		keep = int(min(rs.skip+rs.limit, 1<<20))
	}
	for {
		batch, done, err := scan.next(ctx, 0)
		if err != nil {
			return nil, err
		}
		for i, raw := range batch {
			it := item{raw, scan.decoded[i], len(raw) + exec.DocMemory(scan.decoded[i])}
			items = append(items, it)
			total += it.mem
			if keep > 0 && len(items) >= 2*keep+1024 {
				slices.SortStableFunc(items, less)
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
	slices.SortStableFunc(items, less)
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
			b, err := projectRaw(rs.proj, it.doc)
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
