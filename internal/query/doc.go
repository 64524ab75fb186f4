// Package query holds tierdb's MongoDB query semantics: the cross-type
// comparison and sort order of BSON values, an order-preserving binary key
// encoding of those values, dotted-path lookup, filter parsing and matching,
// sort specifications, and the translation of the indexable part of a filter
// into a SQL prefilter over key columns.
//
// Filter.Match is the reference evaluator: whatever storage does, a document
// is in a query's result exactly when Match says so. The SQL that Filter.SQL
// produces is only a prefilter; it must select a superset of the matching
// rows and must stay in the shape of plain comparisons on key columns, so
// that PostgreSQL can answer it from btree indexes.
//
// The package is pure logic. It must never do I/O, hold package-level mutable
// state, or depend on storage, wire or command packages; they depend on it.
package query
