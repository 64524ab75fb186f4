package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// MaxBatchBytes keeps a reply's batch under the 16 MiB document limit with
// room for the envelope.
const MaxBatchBytes = 16*1024*1024 - 64*1024

// ReadSpec is what a find asks for (or the read half of count, distinct,
// update, delete, findAndModify, a pipeline's leading $match and $sort).
type ReadSpec struct {
	Filter *query.Filter
	Empty  bool // the filter matches everything
	// Exact means the SQL prefilter selects exactly the matches, so rows
	// need no recheck (and no decoding): a plain {_id: scalar} filter.
	Exact bool
	Sort  query.Sort
	Skip  int64
	Limit int64 // 0: none
	Proj  *update.Projection
	// NaturalDesc: sort {$natural: -1}, newest first on a capped collection.
	NaturalDesc bool
}

// ParseReadSpec parses find's filter, sort, projection, skip and limit.
func ParseReadSpec(filter, sortDoc, proj bson.D, skip, limit int64) (*ReadSpec, error) {
	f, err := query.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	s, err := query.ParseSort(sortDoc)
	if err != nil {
		return nil, err
	}
	rs := &ReadSpec{Filter: f, Empty: len(filter) == 0, Exact: IsIDEquality(filter), Sort: s, Skip: skip, Limit: limit}
	if len(proj) > 0 {
		if rs.Proj, err = update.ParseProjection(proj, f); err != nil {
			return nil, err
		}
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	return rs, nil
}

// IsIDEquality reports whether filter is {_id: v} with v a value whose
// equality in MongoDB is exactly equality of its key (not null, which also
// matches missing; not a document, array or regex, which have matching rules
// of their own; not NaN).
func IsIDEquality(filter bson.D) bool {
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

// scanParams is the storage prefilter for the spec.
func (rs *ReadSpec) scanParams(col *storage.Collection) storage.ScanParams {
	where, args := rs.Filter.SQL(col.KeyColumns(), 1)
	return storage.ScanParams{Where: where, Args: args}
}

// Source produces the documents of a cursor a batch at a time.
type Source interface {
	// Next returns up to n documents (n <= 0: as many as fit in one reply,
	// MaxBatchBytes) and whether the source has nothing more. on is the
	// request's (the find's, then each getMore's); a source that read its
	// first batch on a node keeps reading there, so a cursor never moves
	// back in time to a staler standby.
	Next(ctx context.Context, on storage.On, n int) (batch []bson.Raw, done bool, err error)
}

// SliceSource serves documents already in memory.
type SliceSource struct {
	Docs []bson.Raw
}

func (s *SliceSource) Next(_ context.Context, _ storage.On, n int) ([]bson.Raw, bool, error) {
	var out []bson.Raw
	size := 0
	for len(s.Docs) > 0 && (n <= 0 || len(out) < n) {
		if len(out) > 0 && size+ElemSize(len(out), s.Docs[0]) > MaxBatchBytes {
			break
		}
		size += ElemSize(len(out), s.Docs[0])
		out = append(out, s.Docs[0])
		s.Docs = s.Docs[1:]
	}
	return out, len(s.Docs) == 0, nil
}

// ElemSize is what document doc adds to a reply as element i of its batch
// array: the document, its type byte, and its key (the decimal index and a
// NUL). Small documents are dominated by it: 160,000 documents of 30 bytes
// take 6 MB more than their own bytes.
func ElemSize(i int, doc bson.Raw) int {
	n := 1 + len(doc) + 1 // type, document, key's NUL
	for i >= 10 {
		n++
		i /= 10
	}
	return n + 1
}

// ProjectRaw applies a find projection and encodes the result.
func ProjectRaw(p *update.Projection, doc bson.D) (bson.Raw, error) {
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	return bsonx.Marshal(out)
}

// errCorrupt is what a stored document that does not decode becomes.
func errCorrupt() error { return mongoerr.New(mongoerr.InternalError, "stored document is corrupt") }

// Read is one read of a collection: the storage it goes through, where it
// runs (On: the request's tier, transaction and the node the router
// chose), the collection and what is asked of it. Its methods are the ways a handler consumes it: a cursor
// (Open), a count, every match in _id order (Each), an index walk feeding
// a pipeline (Walk), or only the plan (Explain).
type Read struct {
	Store Store
	On    storage.On
	Col   *storage.Collection
	Spec  *ReadSpec
	// Note, when set, is told how the read runs, in MongoDB's planSummary
	// style (PlanSummary), for the slow log.
	Note func(plan string)
}

func (r *Read) note(p storage.ScanParams, memSort bool) {
	if r.Note != nil {
		r.Note(PlanSummary(r.Col, r.Spec, p, memSort, r.On))
	}
}

func (r *Read) scan() *scanSource {
	return &scanSource{store: r.Store, node: r.On.Node, col: r.Col, spec: r.Spec, params: r.Spec.scanParams(r.Col)}
}

// Open picks how to produce the results and returns them as a Source: a
// keyset scan in _id order when the sort allows it (none, _id, $natural),
// a walk of an index that serves the sort (IndexSort), otherwise every
// match sorted in memory. Skip, limit and projection are applied.
func (r *Read) Open(ctx context.Context) (Source, error) {
	scan := r.scan()
	rs := r.Spec
	_, byID := rs.Sort.ByIDOnly()
	if plan, ok := r.IndexSort(); ok {
		src := newOrderedSource(r, plan)
		r.note(src.walkParams(), false)
		return src, nil
	}
	r.note(scan.params, !rs.Sort.IsEmpty() && !byID)
	if rs.Sort.IsEmpty() {
		// A capped collection's natural order is insertion order.
		scan.params.Natural, scan.params.Desc = true, rs.NaturalDesc
		return scan, nil
	}
	if asc, ok := rs.Sort.ByIDOnly(); ok {
		scan.params.Desc = !asc
		return scan, nil
	}
	return sortAll(ctx, r.On, scan, rs)
}

// Count counts the documents the spec selects, skip and limit applied:
// PostgreSQL counts when the filter is empty, else a scan that decodes
// nothing it can match on the BSON bytes. Its sort is ignored.
func (r *Read) Count(ctx context.Context) (int64, error) {
	rs := r.Spec
	if rs.Empty {
		n, err := r.Store.Count(ctx, r.On, r.Col, "", nil)
		if err != nil {
			return 0, err
		}
		n = max(n-rs.Skip, 0)
		if rs.Limit > 0 {
			n = min(n, rs.Limit)
		}
		return n, nil
	}
	src := r.scan()
	var n int64
	for {
		batch, done, err := src.Next(ctx, r.On, 0)
		if err != nil {
			return 0, err
		}
		n += int64(len(batch))
		if done {
			return n, nil
		}
	}
}

// Each calls fn for each document the filter matches, in _id order, a
// batch at a time, until fn says stop. Skip, limit, sort and projection
// are the caller's business.
func (r *Read) Each(ctx context.Context, fn func(doc bson.D, raw bson.Raw) (stop bool, err error)) error {
	src := r.scan()
	src.raw, src.keepDecoded = true, true
	r.note(src.params, false)
	for {
		batch, done, err := src.Next(ctx, r.On, 100)
		if err != nil {
			return err
		}
		for i, raw := range batch {
			stop, err := fn(src.decoded[i], raw)
			if err != nil || stop {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// Walk pushes the documents the filter matches to fn in the spec's sort
// order, walking the index plan names (IndexSort), until fn returns an
// error. limitHint is how many documents the caller takes at most (0:
// unknown), which sizes the walk's first chunk; skip, limit and
// projection are the caller's business.
func (r *Read) Walk(ctx context.Context, plan SortPlan, limitHint int64, fn func(bson.D) error) error {
	src := newOrderedSource(r, plan)
	src.raw, src.keepDecoded, src.limitHint = true, true, limitHint
	r.note(src.walkParams(), false)
	for {
		batch, done, err := src.Next(ctx, r.On, 100)
		if err != nil {
			return err
		}
		for i := range batch {
			if err := fn(src.decoded[i]); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// IndexSort is the index that serves the spec's sort (planIndexSort), if
// one does; never for no sort or a sort by _id alone, which a keyset scan
// serves.
func (r *Read) IndexSort() (SortPlan, bool) {
	if r.Spec.Sort.IsEmpty() {
		return SortPlan{}, false
	}
	if _, byID := r.Spec.Sort.ByIDOnly(); byID {
		return SortPlan{}, false
	}
	return planIndexSort(r.Col.Indexes, r.Spec.Sort, r.Spec.Filter.PinnedPaths())
}
