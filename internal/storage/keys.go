package storage

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// IDKey is the primary-key column value for an _id.
func IDKey(id any) []byte { return query.AppendKey(nil, id) }

// indexKey computes the key column value of ix for doc: the concatenated keys of
// its fields, a missing field counting as null. It returns nil (SQL NULL) when
// any path crosses an array, because one column cannot hold a multikey entry;
// query pushdown treats NULL as "recheck this row".
func indexKey(ix *Index, doc bson.D) []byte {
	var key []byte
	for _, k := range ix.Keys {
		v, ok := walk(doc, k.Field)
		if !ok {
			return nil
		}
		key = query.AppendKey(key, v)
	}
	if key == nil {
		key = []byte{}
	}
	return key
}

// walk follows a dotted path through subdocuments. ok is false when an array
// is met anywhere on the path; a missing field yields (nil, true).
func walk(doc bson.D, path string) (any, bool) {
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		switch d := cur.(type) {
		case bson.D:
			cur = nil
			for _, e := range d {
				if e.Key == part {
					cur = e.Value
					break
				}
			}
		case bson.A:
			return nil, false
		default:
			return nil, true
		}
	}
	if _, isArr := cur.(bson.A); isArr {
		return nil, false
	}
	return cur, true
}

// rowValues returns the column values for a document: _id key, raw doc and
// one key per secondary index, in the collection's column order.
func (c *Collection) rowValues(id any, doc bson.D, raw []byte) []any {
	vals := make([]any, 0, 1+len(c.Indexes))
	vals = append(vals, IDKey(id), raw)
	for i := 1; i < len(c.Indexes); i++ {
		vals = append(vals, indexKey(&c.Indexes[i], doc))
	}
	return vals
}

// columns lists the table's columns in rowValues order, quoted.
func (c *Collection) columns() []string {
	cols := []string{"_id", "doc"}
	for i := 1; i < len(c.Indexes); i++ {
		cols = append(cols, quoteIdent(c.Indexes[i].Column))
	}
	return cols
}
