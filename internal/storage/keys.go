package storage

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// IDKey is the primary-key column value for an _id.
func IDKey(id any) []byte { return query.AppendKey(nil, id) }

// indexKey computes the key column value of ix for doc (query.IndexKey, so
// the stored keys and the SQL pushdown cannot drift apart). It returns nil
// (SQL NULL) for a multikey entry: one column cannot hold one, and pushdown
// treats NULL as "recheck this row".
func indexKey(ix *Index, doc bson.D) []byte {
	fields := make([]string, len(ix.Keys))
	for i, k := range ix.Keys {
		fields[i] = k.Field
	}
	key, ok := query.IndexKey(doc, fields)
	if !ok {
		return nil
	}
	if key == nil {
		key = []byte{}
	}
	return key
}

// rowValues returns the column values for a document in columns() order:
// _id key, raw doc, then per secondary index its key column and, for a unique
// index, the array of all its entry keys (see entries.go).
func (c *Collection) rowValues(id any, doc bson.D, raw []byte) []any {
	vals := make([]any, 0, 2+2*len(c.Indexes))
	vals = append(vals, IDKey(id), raw)
	for i := 1; i < len(c.Indexes); i++ {
		ix := &c.Indexes[i]
		vals = append(vals, indexKey(ix, doc))
		if ix.hasEntries() {
			vals = append(vals, entryKeys(ix, doc))
		}
	}
	return vals
}

// columns lists the table's columns in rowValues order, quoted.
func (c *Collection) columns() []string {
	cols := []string{"_id", "doc"}
	for i := 1; i < len(c.Indexes); i++ {
		ix := &c.Indexes[i]
		cols = append(cols, quoteIdent(ix.Column))
		if ix.hasEntries() {
			cols = append(cols, quoteIdent(ix.entriesColumn()))
		}
	}
	return cols
}

// entryKeys are every key doc has in a unique secondary index, one per
// indexed value, the way MongoDB indexes arrays: each element of an array on
// the path is a value of its own, and a missing field is null. Compound
// indexes take the cross product. Duplicates are removed, so one document
// never clashes with itself.
func entryKeys(ix *Index, doc bson.D) [][]byte {
	keys := [][]byte{nil}
	for _, k := range ix.Keys {
		values := fieldValues(doc, k.Field)
		next := make([][]byte, 0, len(keys)*len(values))
		for _, prefix := range keys {
			for _, v := range values {
				next = append(next, query.AppendKey(append([]byte(nil), prefix...), v))
			}
		}
		keys = next
	}
	seen := map[string]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// fieldValues are the values a path indexes: arrays reached are expanded
// one level; nothing reached indexes as null; an empty array as undefined,
// as in MongoDB.
func fieldValues(doc bson.D, path string) []any {
	var out []any
	for _, v := range query.LookupAll(doc, path) {
		if a, ok := v.(bson.A); ok {
			if len(a) == 0 {
				out = append(out, bson.Undefined{})
			}
			out = append(out, a...)
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		out = append(out, nil)
	}
	return out
}
