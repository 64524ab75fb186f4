// Package exectest holds storage fakes for tests that run without
// PostgreSQL: Table, one collection's documents in memory read and written
// as storage reads and writes them, and Store, a catalog of Tables that
// satisfies exec.Store and exec.OutStore and the catalog and views of the
// command layer. They model storage's semantics (keyset positions, index
// walks, insertion order, compare-and-swap), never its SQL: a prefilter
// is ignored, as it only ever selects a superset of the matches.
//
// It must never be imported by anything but tests.
package exectest

import (
	"bytes"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// Row is one stored document.
type Row struct {
	Doc bson.D
	Raw bson.Raw
	Key []byte // _id key
	Seq int64  // insertion order, from 1
}

// Table is one collection's rows, in insertion order.
type Table struct {
	Rows []Row
	// Where, when set, is the prefilter's selection (an exact pushdown):
	// Scan returns only the rows it keeps.
	Where func(bson.D) bool
	// CutAfter, when > 0, stops a chunk after that many kept rows with
	// Cut set, as storage does past its byte bound.
	CutAfter int
}

// NewTable is a table holding docs, inserted in order.
func NewTable(docs ...bson.D) (*Table, error) {
	t := &Table{}
	for _, d := range docs {
		if _, err := t.Append(d); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Find is the index of the row of _id key key, -1 when there is none.
func (t *Table) Find(key []byte) int {
	for i, r := range t.Rows {
		if bytes.Equal(r.Key, key) {
			return i
		}
	}
	return -1
}

// Set stores doc as row i.
func (t *Table) Set(i int, doc bson.D) error {
	raw, err := bsonx.Marshal(doc)
	if err != nil {
		return err
	}
	t.Rows[i].Doc, t.Rows[i].Raw = doc, raw
	return nil
}

// Append stores doc after the others, without checking its _id.
func (t *Table) Append(doc bson.D) (Row, error) {
	seq := int64(1)
	if len(t.Rows) > 0 {
		seq = t.Rows[len(t.Rows)-1].Seq + 1
	}
	id, _ := Lookup(doc, "_id")
	t.Rows = append(t.Rows, Row{Key: storage.IDKey(id), Seq: seq})
	if err := t.Set(len(t.Rows)-1, doc); err != nil {
		t.Rows = t.Rows[:len(t.Rows)-1]
		return Row{}, err
	}
	return t.Rows[len(t.Rows)-1], nil
}

// Docs are the stored documents in insertion order.
func (t *Table) Docs() []bson.D {
	var out []bson.D
	for _, r := range t.Rows {
		out = append(out, r.Doc)
	}
	return out
}

// Lookup is d's top-level field k.
func Lookup(d bson.D, k string) (any, bool) {
	for _, e := range d {
		if e.Key == k {
			return e.Value, true
		}
	}
	return nil, false
}

// orderKey is the key column value of r for the index of col with that
// column, nil for a multikey document: query.IndexKey of its values, as
// storage computes it.
func orderKey(col *storage.Collection, column string, r Row) []byte {
	for _, ix := range col.Indexes {
		if ix.Column != column {
			continue
		}
		var fields []string
		for _, k := range ix.Keys {
			fields = append(fields, k.Field)
		}
		key, ok := query.IndexKey(r.Doc, fields)
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

// Scan reads the chunk of rows p selects (storage.ScanParams: keyset
// position, _id or insertion order, an index key column walked in byte
// order with its multikey rows apart, a row limit) as PostgreSQL would,
// asking keep, when not nil, about each row's document. Of the SQL
// prefilter it evaluates one form only, an equality on _id (idEquality),
// as reads take its rows without a recheck.
func (t *Table) Scan(col *storage.Collection, p storage.ScanParams, keep func([]byte) bool) storage.Chunk {
	type cand struct {
		r   Row
		ord []byte
	}
	var cands []cand
	id, exact := idEquality(p)
	for _, r := range t.Rows {
		if t.Where != nil && !t.Where(r.Doc) || exact && !bytes.Equal(r.Key, id) {
			continue
		}
		c := cand{r: r}
		switch o := p.Order; {
		case o != nil && o.Null:
			if orderKey(col, o.Column, r) != nil {
				continue
			}
			if p.After != nil && bytes.Compare(r.Key, p.After) <= 0 {
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
				ic := bytes.Compare(r.Key, p.After)
				if o.IDDesc {
					ic = -ic
				}
				if kc < 0 || kc == 0 && ic <= 0 {
					continue
				}
			}
		case p.Natural && col.Capped != nil:
			if p.AfterSeq > 0 && (!p.Desc && r.Seq <= p.AfterSeq || p.Desc && r.Seq >= p.AfterSeq) {
				continue
			}
		default:
			if p.After != nil {
				c := bytes.Compare(r.Key, p.After)
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
			return bytes.Compare(a.r.Key, b.r.Key)
		case o != nil:
			c := bytes.Compare(a.ord, b.ord)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
			c = bytes.Compare(a.r.Key, b.r.Key)
			if o.IDDesc {
				c = -c
			}
			return c
		case p.Natural && col.Capped != nil:
			c := int(a.r.Seq - b.r.Seq)
			if p.Desc {
				c = -c
			}
			return c
		}
		c := bytes.Compare(a.r.Key, b.r.Key)
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
		ch.LastKey, ch.LastOrderKey, ch.LastSeq = c.r.Key, c.ord, c.r.Seq
		if keep != nil && !keep(c.r.Raw) {
			continue
		}
		ch.Rows = append(ch.Rows, storage.Row{Key: c.r.Key, Doc: c.r.Raw, OrderKey: c.ord, Seq: c.r.Seq})
		if t.CutAfter > 0 && len(ch.Rows) >= t.CutAfter && ch.Read < len(cands) {
			ch.Cut = true
			break
		}
	}
	return ch
}

// idEquality is the _id key a prefilter of the form "_id" = $1 selects
// (what query.Filter.SQL makes of {_id: scalar}).
func idEquality(p storage.ScanParams) ([]byte, bool) {
	if p.Where != `"_id" = $1` || len(p.Args) != 1 {
		return nil, false
	}
	key, ok := p.Args[0].([]byte)
	return key, ok
}

// SearchText finds the documents whose string field "body" holds any of
// the terms (whole words, case as given), scored by how many times they
// occur; by descending score with ByScore, else in _id order; Limit
// bounds them. The rest of a TextSearch (phrases, negations, languages,
// the prefilter) is not modelled.
func (t *Table) SearchText(q storage.TextSearch) []storage.TextRow {
	var out []storage.TextRow
	for _, r := range t.Rows {
		body, _ := Lookup(r.Doc, "body")
		s, _ := body.(string)
		score := 0.0
		for _, w := range strings.Fields(s) {
			if slices.Contains(q.Terms, w) {
				score++
			}
		}
		if score > 0 {
			out = append(out, storage.TextRow{Row: storage.Row{Key: r.Key, Doc: r.Raw}, Score: score})
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
	return out
}

// Tail reads the rows after seq p.After, as storage.Store.Tail does;
// lost says that row is gone.
func (t *Table) Tail(p storage.TailParams) (rows []storage.Row, lost bool) {
	var out []storage.Row
	for _, r := range t.Rows {
		if r.Seq >= p.After {
			out = append(out, storage.Row{Key: r.Key, Doc: r.Raw, Seq: r.Seq})
		}
	}
	if p.After > 0 {
		if len(out) == 0 || out[0].Seq != p.After {
			return nil, true
		}
		out = out[1:]
	}
	return out[:min(len(out), max(p.Limit, 1))], false
}

// Get is the row of key, nil when there is none.
func (t *Table) Get(key []byte) *storage.Row {
	i := t.Find(key)
	if i < 0 {
		return nil
	}
	return &storage.Row{Key: t.Rows[i].Key, Doc: t.Rows[i].Raw}
}

// Insert appends docs; a duplicate _id is the document's WriteError,
// and with ordered the batch stops at it. inserted, when not nil, hears
// of each row stored.
func (t *Table) Insert(docs []storage.Doc, ordered bool, inserted func(Row)) (int, []storage.WriteError, error) {
	n := 0
	var werrs []storage.WriteError
	for i, d := range docs {
		if t.Find(storage.IDKey(d.ID)) >= 0 {
			werrs = append(werrs, storage.WriteError{Index: i, Err: &storage.Error{Code: storage.ErrDuplicateKey, Msg: "E11000 duplicate key error: _id_"}})
			if ordered {
				break
			}
			continue
		}
		r, err := t.Append(d.D)
		if err != nil {
			return n, werrs, err
		}
		if inserted != nil {
			inserted(r)
		}
		n++
	}
	return n, werrs, nil
}

// Swap stores newDoc as row i if it still holds old.
func (t *Table) Swap(i int, old []byte, newDoc bson.D) (bool, error) {
	if i < 0 || !bytes.Equal(t.Rows[i].Raw, old) {
		return false, nil
	}
	return true, t.Set(i, newDoc)
}

// DeleteIfHolds deletes the row of r.Key if it still holds r.Doc.
func (t *Table) DeleteIfHolds(r storage.Row) bool {
	i := t.Find(r.Key)
	if i < 0 || !bytes.Equal(t.Rows[i].Raw, r.Doc) {
		return false
	}
	t.Rows = append(t.Rows[:i], t.Rows[i+1:]...)
	return true
}
