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
