package storage

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// IDKey is the primary-key column value for an _id.
func IDKey(id any) []byte { return query.AppendKey(nil, id) }

// notIndexed is the key column value of a document a sparse or partial
// index leaves out: below every real key (each starts with a bracket byte),
// never selected by a pushed-down predicate, and not NULL (which means
// "multikey, recheck").
var notIndexed = []byte{}

// indexKey computes the key column value of ix for doc (query.IndexKey, so
// the stored keys and the SQL pushdown cannot drift apart). It returns nil
// (SQL NULL) for a multikey entry: one column cannot hold one, and pushdown
// treats NULL as "recheck this row"; notIndexed for a document the index
// leaves out. A hashed field holding an array fails, as in MongoDB.
func indexKey(ix *Index, doc bson.D) ([]byte, error) {
	if !ix.member(doc) {
		return notIndexed, nil
	}
	fields := make([]string, len(ix.Keys))
	for i, k := range ix.Keys {
		fields[i] = k.Field
	}
	hashed := ix.hashedField()
	key, ok := query.IndexKeyHashed(doc, fields, hashed)
	if !ok {
		if hashed >= 0 && hashedArray(doc, ix.Keys[hashed].Field) {
			return nil, newErr(ErrCannotIndex, "hashed indexes do not currently support array values. Found array at path: %s", ix.Keys[hashed].Field)
		}
		return nil, nil
	}
	if key == nil {
		key = []byte{}
	}
	return key, nil
}

// hashedArray reports whether path meets an array (what a hashed index
// cannot hold).
func hashedArray(doc bson.D, path string) bool {
	_, ok := query.IndexKey(doc, []string{path})
	return !ok
}

// member reports whether ix holds doc: a sparse index leaves out documents
// missing every indexed field, a partial index those its filter does not
// match.
func (ix *Index) member(doc bson.D) bool {
	if ix.partial != nil && !ix.partial.Match(doc) {
		return false
	}
	if !ix.Sparse {
		return true
	}
	for _, k := range ix.Keys {
		if len(query.LookupAll(doc, k.Field)) > 0 {
			return true
		}
	}
	return false
}

// rowValues returns the column values for a document in columns() order:
// _id key, raw doc, then per secondary index its key column and, for a unique
// index, the array of all its entry keys (see entries.go).
func (c *Collection) rowValues(id any, doc bson.D, raw []byte) ([]any, error) {
	vals := make([]any, 0, 2+2*len(c.Indexes))
	vals = append(vals, IDKey(id), raw)
	for i := 1; i < len(c.Indexes); i++ {
		ix := &c.Indexes[i]
		if ix.Text != nil {
			t, err := textValue(ix, doc)
			if err != nil {
				return nil, err
			}
			vals = append(vals, t)
			continue
		}
		k, err := indexKey(ix, doc)
		if err != nil {
			return nil, err
		}
		vals = append(vals, k)
		if ix.hasEntries() {
			vals = append(vals, entryKeys(ix, doc))
		}
	}
	return vals, nil
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

// columnWraps gives, in columns() order, the SQL expression each column's
// value goes through ("%s" wrapped), or "" for the value itself: a text
// index's column is the tsvector tierdb.fts computes from its input.
func (c *Collection) columnWraps() []string {
	wraps := []string{"", ""}
	for i := 1; i < len(c.Indexes); i++ {
		ix := &c.Indexes[i]
		if ix.Text != nil {
			wraps = append(wraps, catalogSchema+".fts(%s::text[])")
			continue
		}
		wraps = append(wraps, "")
		if ix.hasEntries() {
			wraps = append(wraps, "")
		}
	}
	return wraps
}

// wrapOr is wrap, or "%s" for none.
func wrapOr(wrap string) string {
	if wrap == "" {
		return "%s"
	}
	return wrap
}

// entryKeys are every key doc has in a unique secondary index, one per
// indexed value, the way MongoDB indexes arrays: each element of an array on
// the path is a value of its own, and a missing field is null. Compound
// indexes take the cross product. Duplicates are removed, so one document
// never clashes with itself. A document the index leaves out (sparse,
// partial) has none (nil: SQL NULL).
func entryKeys(ix *Index, doc bson.D) [][]byte {
	if !ix.member(doc) {
		return nil
	}
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
