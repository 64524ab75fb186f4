// Package storage keeps documents in PostgreSQL.
//
// Each collection is one table (_id bytea PRIMARY KEY, doc bytea, k_<n> bytea…):
// _id holds the order-preserving key of the document's _id (query.AppendKey), doc
// the exact BSON bytes, and every secondary index one key column with a btree
// index on it. A catalog table maps MongoDB namespaces to tables and indexes.
// Key columns are computed in Go at each write: NULL for a multikey document
// (recheck), the empty string for one a sparse or partial index leaves out
// (never selected, and outside the PostgreSQL partial index behind it), a hash for a hashed field; a text index's column is a
// tsvector (GIN) that tierdb.fts computes from the strings Go extracts
// (text.go). Hidden and text indexes are not offered to query pushdown
// (KeyColumns); unique ones keep an entries table (entries.go).
//
// Reads are keyset walks in chunks: in _id order, or, for a sort that an
// index serves, in the order of that index's key column (KeyOrder), whose
// NULL (multikey) rows the caller reads apart. ScanChunk lets the caller
// refuse rows on their bytes before they are copied out of the connection.
//
// Requests run on a small, bounded pool of PostgreSQL backends per tier and
// node; the PIDs of each pool's backends are known, so the OS scheduling of
// the backend serving a tier can be controlled one by one. Where work runs
// is an explicit argument, never a context value: every method that reads
// or writes documents or the catalog takes an On right after its context,
// naming the tier, the node reads were routed to, the transaction and
// whether the commit may skip its WAL flush (on.go). Work tierdb starts on
// its own (change streams' slot, TTL) names its tier like any other.
//
// storage speaks in its own error codes (Error, ErrorCode), translated from
// SQLSTATEs in one place (errors.go). It must never decide MongoDB semantics
// (matching, update operators, wire codes) and never return SQL text in an
// error message meant for clients.
package storage
