package storage

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
)

// Validation is what Validate found in one collection.
type Validation struct {
	Records int64
	// InvalidDocuments are rows whose doc is not a well-formed BSON
	// document with an _id.
	InvalidDocuments int64
	// KeysPerIndex is the number of index keys each index holds by
	// MongoDB's counting (one per document in the _id index; one per
	// indexed value of a multikey document in the others).
	KeysPerIndex map[string]int64
	// Errors describe each inconsistency, at most maxValidationErrors of
	// them (Truncated says more were found).
	Errors    []string
	Truncated bool
	// Missing and Extra count index keys that the documents call for but
	// the index lacks, and keys the index holds that no document calls
	// for.
	Missing, Extra int64
}

// Valid reports a collection without inconsistencies.
func (v *Validation) Valid() bool {
	return v.InvalidDocuments == 0 && len(v.Errors) == 0 && v.Missing == 0 && v.Extra == 0
}

const (
	maxValidationErrors = 100
	validateBatch       = 1000
)

func (v *Validation) errorf(format string, args ...any) {
	if len(v.Errors) >= maxValidationErrors {
		v.Truncated = true
		return
	}
	v.Errors = append(v.Errors, fmt.Sprintf(format, args...))
}

// Validate reads every row of c, in batches (bounded memory whatever the
// collection's size), and checks what can be checked: each doc is a valid
// BSON document with an _id; the primary key is the key of that _id; every
// index key column holds what the document calls for (as a write would
// store it; a text index's tsvector is computed by PostgreSQL and not
// rechecked); each unique index's entries table holds exactly the entries
// its rows list.
func (s *Store) Validate(ctx context.Context, on On, c *Collection) (*Validation, error) {
	v := &Validation{KeysPerIndex: map[string]int64{}}
	for i := range c.Indexes {
		v.KeysPerIndex[c.Indexes[i].Name] = 0
	}
	cols := c.columns()
	q := s.readQ(ctx, on)
	var after []byte
	for {
		sql := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + c.table
		args := []any{}
		if after != nil {
			sql += ` WHERE _id > $1`
			args = append(args, after)
		}
		sql += fmt.Sprintf(` ORDER BY _id LIMIT %d`, validateBatch)
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return nil, s.readError(ctx, on, c, err)
		}
		n := 0
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return nil, s.readError(ctx, on, c, err)
			}
			n++
			after, _ = vals[0].([]byte)
			v.checkRow(c, vals)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.readError(ctx, on, c, err)
		}
		if n < validateBatch {
			break
		}
	}
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		if ix.Text != nil {
			// One key per distinct term of each document, as MongoDB
			// counts a text index's keys.
			var terms int64
			if err := q.QueryRow(ctx, `SELECT coalesce(sum(length(`+quoteIdent(ix.Column)+`)), 0)::bigint FROM `+c.table).Scan(&terms); err != nil {
				return nil, s.readError(ctx, on, c, err)
			}
			v.KeysPerIndex[ix.Name] = terms
			continue
		}
		if !ix.hasEntries() {
			continue
		}
		var entries, listed int64
		err := q.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+dataSchema+`.`+quoteIdent(entriesTable(c, ix))+`),
	(SELECT coalesce(sum(cardinality(`+quoteIdent(ix.entriesColumn())+`)), 0) FROM `+c.table+`)::bigint`).Scan(&entries, &listed)
		if err != nil {
			return nil, s.readError(ctx, on, c, err)
		}
		if entries != listed {
			v.errorf("index %s holds %d entries, its documents list %d", ix.Name, entries, listed)
			if entries > listed {
				v.Extra += entries - listed
			} else {
				v.Missing += listed - entries
			}
		}
	}
	return v, nil
}

// checkRow checks one row: vals are the columns in columns() order.
func (v *Validation) checkRow(c *Collection, vals []any) {
	v.Records++
	key, _ := vals[0].([]byte)
	raw, _ := vals[1].([]byte)
	if err := bson.Raw(raw).Validate(); err != nil {
		v.InvalidDocuments++
		v.errorf("document with _id key %x is not valid BSON: %v", key, err)
		return
	}
	doc, err := bsonx.Decode(raw)
	if err != nil {
		v.InvalidDocuments++
		v.errorf("document with _id key %x cannot be decoded: %v", key, err)
		return
	}
	id, ok := query.Lookup(doc, "_id")
	if !ok {
		v.InvalidDocuments++
		v.errorf("document with _id key %x has no _id", key)
		return
	}
	want, err := c.rowValues(id, doc, raw)
	if err != nil {
		v.InvalidDocuments++
		v.errorf("document with _id key %x cannot be indexed: %v", key, err)
		return
	}
	if len(want) != len(vals) {
		v.errorf("document with _id key %x: %d columns stored, %d expected", key, len(vals), len(want))
		return
	}
	v.KeysPerIndex[c.Indexes[0].Name]++
	if !bytes.Equal(want[0].([]byte), key) {
		v.Missing++
		v.Extra++
		v.errorf("document with _id key %x is stored under another _id key", key)
	}
	col := 2
	for i := 1; i < len(c.Indexes); i++ {
		ix := &c.Indexes[i]
		if ix.Text != nil {
			// PostgreSQL computes a text index's tsvector from the value
			// rowValues gives: not rechecked here; its keys are counted
			// in SQL (Validate).
			col++
			continue
		}
		v.KeysPerIndex[ix.Name] += int64(len(entryKeys(ix, doc)))
		if !sameColumn(want[col], vals[col]) {
			v.Missing++
			v.Extra++
			v.errorf("index %s: the key stored for the document with _id key %x is not the document's", ix.Name, key)
		}
		col++
		if ix.hasEntries() {
			if !sameColumn(want[col], vals[col]) {
				v.Missing++
				v.Extra++
				v.errorf("index %s: the entries stored for the document with _id key %x are not the document's", ix.Name, key)
			}
			col++
		}
	}
}

// sameColumn compares what a write would store (want: []byte or
// [][]byte) with what pgx read back (got: []byte, []any of []byte, or nil
// for SQL NULL).
func sameColumn(want, got any) bool {
	switch w := want.(type) {
	case []byte:
		g, ok := got.([]byte)
		if gotNull := got == nil || (ok && g == nil); w == nil || gotNull {
			return w == nil && gotNull
		}
		return ok && bytes.Equal(w, g)
	case [][]byte:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			b, ok := g[i].([]byte)
			if !ok || !bytes.Equal(b, w[i]) {
				return false
			}
		}
		return true
	}
	return false
}
