package exec

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// fakeStore is a Store over documents in memory, for the tests of reads
// and writes (its write methods are in fakewrite_test.go). A read runs
// the scan a storage.ScanParams describes (keyset position, _id or
// insertion order, an index key column walked in byte order with
// its multikey rows apart, a row limit) as PostgreSQL would, except that
// it ignores the SQL prefilter (Where), which is only ever a superset of
// the matches: every row comes back, and the read's recheck must drop
// those the filter does not match. The index key column of a document is
// query.IndexKey of its values, as storage computes it, NULL when the
// document is multikey on the index.
type fakeStore struct {
	rows []fakeRow
	// where, when set, is the prefilter's selection (an exact pushdown).
	where func(bson.D) bool
	// cutAfter, when > 0, stops a chunk after that many kept rows with
	// Cut set, as storage does past its byte bound.
	cutAfter int
	// calls are the params of every ScanChunk, in order; read counts the
	// rows all of them returned.
	calls []storage.ScanParams
	read  int
	// on is the node of every call; searches the text searches.
	on       []storage.On
	searches []storage.TextSearch
	// appended is Appended's channel, closed by append.
	appended chan struct{}

	// The write side (fakewrite_test.go): w's fields model the
	// collection's existence, concurrent writers and what was called.
	w fakeWrites
}

type fakeRow struct {
	doc bson.D
	raw bson.Raw
	key []byte // _id key
	seq int64  // insertion order, from 1
}

func newFakeStore(t *testing.T, docs ...bson.D) *fakeStore {
	t.Helper()
	f := &fakeStore{}
	for i, d := range docs {
		raw, err := bsonx.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := lookupField(d, "_id")
		f.rows = append(f.rows, fakeRow{doc: d, raw: raw, key: storage.IDKey(id), seq: int64(i + 1)})
	}
	return f
}

func lookupField(d bson.D, k string) (any, bool) {
	for _, e := range d {
		if e.Key == k {
			return e.Value, true
		}
	}
	return nil, false
}

// orderKey is the key column value of r for the index with that column,
// nil for a multikey document.
func orderKey(col *storage.Collection, column string, r fakeRow) []byte {
	for _, ix := range col.Indexes {
		if ix.Column != column {
			continue
		}
		var fields []string
		for _, k := range ix.Keys {
			fields = append(fields, k.Field)
		}
		key, ok := query.IndexKey(r.doc, fields)
		if !ok {
			return nil
		}
		if key == nil {
			key = []byte{}
		}
		return key
	}
	panic("no index with column " + column)
}

func (f *fakeStore) ScanChunk(_ context.Context, on storage.On, col *storage.Collection, p storage.ScanParams, keep func([]byte) bool) (storage.Chunk, error) {
	f.calls = append(f.calls, p)
	f.on = append(f.on, on)
	type cand struct {
		r   fakeRow
		ord []byte
	}
	var cands []cand
	for _, r := range f.rows {
		if f.where != nil && !f.where(r.doc) {
			continue
		}
		c := cand{r: r}
		switch o := p.Order; {
		case o != nil && o.Null:
			if orderKey(col, o.Column, r) != nil {
				continue
			}
			if p.After != nil && bytes.Compare(r.key, p.After) <= 0 {
				continue
			}
		case o != nil:
			c.ord = orderKey(col, o.Column, r)
			if c.ord == nil {
				continue
			}
			if p.After != nil && o.After != nil {
				kc := bytes.Compare(c.ord, o.After)
				if o.Desc {
					kc = -kc
				}
				ic := bytes.Compare(r.key, p.After)
				if o.IDDesc {
					ic = -ic
				}
				if kc < 0 || kc == 0 && ic <= 0 {
					continue
				}
			}
		case p.Natural && col.Capped != nil:
			if p.AfterSeq > 0 && (!p.Desc && r.seq <= p.AfterSeq || p.Desc && r.seq >= p.AfterSeq) {
				continue
			}
		default:
			if p.After != nil {
				c := bytes.Compare(r.key, p.After)
				if !p.Desc && c <= 0 || p.Desc && c >= 0 {
					continue
				}
			}
		}
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch o := p.Order; {
		case o != nil && o.Null:
			return bytes.Compare(a.r.key, b.r.key)
		case o != nil:
			c := bytes.Compare(a.ord, b.ord)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
			c = bytes.Compare(a.r.key, b.r.key)
			if o.IDDesc {
				c = -c
			}
			return c
		case p.Natural && col.Capped != nil:
			c := int(a.r.seq - b.r.seq)
			if p.Desc {
				c = -c
			}
			return c
		}
		c := bytes.Compare(a.r.key, b.r.key)
		if p.Desc {
			c = -c
		}
		return c
	})
	if p.Limit > 0 && len(cands) > p.Limit {
		cands = cands[:p.Limit]
	}
	var ch storage.Chunk
	for _, c := range cands {
		ch.Read++
		ch.LastKey, ch.LastOrderKey, ch.LastSeq = c.r.key, c.ord, c.r.seq
		if keep != nil && !keep(c.r.raw) {
			continue
		}
		ch.Rows = append(ch.Rows, storage.Row{Key: c.r.key, Doc: c.r.raw, OrderKey: c.ord, Seq: c.r.seq})
		if f.cutAfter > 0 && len(ch.Rows) >= f.cutAfter && ch.Read < len(cands) {
			ch.Cut = true
			break
		}
	}
	f.read += ch.Read
	return ch, nil
}

func (f *fakeStore) Count(_ context.Context, on storage.On, _ *storage.Collection, where string, _ []any) (int64, error) {
	f.on = append(f.on, on)
	if where != "" {
		panic("fakeStore counts only every row")
	}
	return int64(len(f.rows)), nil
}

func (f *fakeStore) Explain(_ context.Context, on storage.On, _ *storage.Collection, p storage.ScanParams) (string, error) {
	f.calls = append(f.calls, p)
	f.on = append(f.on, on)
	return "fake plan", nil
}

// SearchText finds the documents whose string field "body" holds any of
// the terms (whole words, case as given), scored by how many times they
// occur; by descending score with ByScore, else in _id order; Limit
// bounds them. The rest of a TextSearch (phrases, negations, languages,
// the prefilter) is not modelled.
func (f *fakeStore) SearchText(_ context.Context, on storage.On, _ *storage.Collection, _ *storage.Index, q storage.TextSearch) ([]storage.TextRow, error) {
	f.on = append(f.on, on)
	f.searches = append(f.searches, q)
	var out []storage.TextRow
	for _, r := range f.rows {
		body, _ := lookupField(r.doc, "body")
		s, _ := body.(string)
		score := 0.0
		for _, w := range strings.Fields(s) {
			if slices.Contains(q.Terms, w) {
				score++
			}
		}
		if score > 0 {
			out = append(out, storage.TextRow{Row: storage.Row{Key: r.key, Doc: r.raw}, Score: score})
		}
	}
	if q.ByScore {
		slices.SortStableFunc(out, func(a, b storage.TextRow) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Tail reads the rows after seq p.After, as storage.Store.Tail does.
func (f *fakeStore) Tail(_ context.Context, on storage.On, _ *storage.Collection, p storage.TailParams) ([]storage.Row, bool, error) {
	f.on = append(f.on, on)
	var out []storage.Row
	for _, r := range f.rows {
		if r.seq >= p.After {
			out = append(out, storage.Row{Key: r.key, Doc: r.raw, Seq: r.seq})
		}
	}
	if p.After > 0 {
		if len(out) == 0 || out[0].Seq != p.After {
			return nil, true, nil
		}
		out = out[1:]
	}
	return out[:min(len(out), max(p.Limit, 1))], false, nil
}

// Appended is closed by the next append.
func (f *fakeStore) Appended(*storage.Collection) <-chan struct{} {
	if f.appended == nil {
		f.appended = make(chan struct{})
	}
	return f.appended
}

// append inserts doc after the others and wakes Appended's waiters.
func (f *fakeStore) append(t *testing.T, doc bson.D) {
	t.Helper()
	last := int64(0)
	if len(f.rows) > 0 {
		last = f.rows[len(f.rows)-1].seq
	}
	g := newFakeStore(t, doc)
	g.rows[0].seq = last + 1
	f.rows = append(f.rows, g.rows[0])
	if f.appended != nil {
		close(f.appended)
		f.appended = nil
	}
}
