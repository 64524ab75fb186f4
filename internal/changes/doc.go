// Package changes turns PostgreSQL logical decoding into MongoDB change
// stream events.
//
// Source: one logical replication slot ("tierdb_changes", plugin pgoutput)
// over a publication of tierdb's data schema and its catalog table, shared
// by every change stream of the tierdb. The Hub reads it with the SQL
// interface (pg_logical_slot_peek_binary_changes) on a low-tier PostgreSQL
// backend, keeps the decoded changes in a bounded in-memory buffer, and
// hands each stream the changes after its position. The slot is advanced
// only as far as every open stream has consumed, so a stream resumes after
// a restart of tierdb (its resume token holds the commit LSN); with no
// stream open the slot keeps its history for Retention, then follows the
// end of the WAL. A token older than the slot's position answers
// ChangeStreamHistoryLost (286). No stream waits for another: when the
// buffer is full, the streams still in its older half are left behind
// (lagging) and read the slot on their own, a bounded batch at a time,
// until they reach the buffer again; so does a stream resumed before the
// buffer. One that trails the newest change read by more than
// MaxLagMessages loses its history, so that the slot (which every read
// decodes from its position on) moves on. OpenAt (startAtOperationTime)
// reads from the slot's position, passing over changes before the time. PostgreSQL itself bounds what a slot may
// retain (max_slot_wal_keep_size): a slot past it is invalidated and
// recreated, and every older token is then lost.
//
// Decoder turns pgoutput messages into Changes (insert, update, delete of a
// document; drop and rename of a collection, seen as changes of the
// catalog); Change.Event shapes a Change as MongoDB's event document. Both
// are pure and tested without PostgreSQL.
//
// This package must never write to PostgreSQL beyond the slot's position,
// never hold more than the buffer bound in memory, and never decode on a
// high-tier backend or before low-tier admission.
package changes
