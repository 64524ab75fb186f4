// Package exec runs queries and writes: the reads of find, count,
// distinct, the statements of insert, update, delete and findAndModify,
// the TTL monitor's expiry, and aggregation pipelines. Command handlers
// parse a command's arguments, call exec and reply.
//
// Reads (read.go) are operators over a small storage interface, Store
// (store.go): a Read is a collection, a ReadSpec (filter, sort, skip,
// limit, projection) and where it runs, and it opens a Source, the
// operator a cursor pulls batches from: a keyset scan in _id or
// insertion order that rechecks what the SQL prefilter lets through
// (scan.go), a walk of an index whose key column serves the sort, with
// the multikey documents merged in (ordered.go, chosen by sortplan.go),
// or every match sorted in memory with a top-k under a limit
// (sortall.go). Count, Each and Walk consume the same operators for
// count, writes and a pipeline's input (Feed, input.go); Explain
// describes them without reading, and Analyzed (execstats.go) runs them
// for explain's executionStats with each storage statement analyzed. TextRead runs a $text search
// (text.go), TailSource a tailable cursor (tail.go), Distinct gathers
// distinct's values.
//
// Writes (write.go) run on a Write: the Store, where the work runs, the
// namespace and its collection (nil until an upsert or insert creates
// it). Update, Delete and FindAndModify read their matches through a Read
// and write each back with a compare-and-swap on the bytes it was read
// with (Store.Replace, Store.Delete): a swap lost to a concurrent writer
// takes the row lock (Store.WithRowLocked), rechecks the filter on what it
// finds there (an $expr error fails the statement) and finishes under the
// lock, so it is applied once, never refused. An update by _id first
// tries the version this process last wrote (Store.LastWritten) without
// reading, or locks the document first when it lost a swap lately
// (Store.Hot). An upsert with no match inserts the document the filter's
// equalities and the update make; a duplicate key on that insert means a
// concurrent upsert won, and the statement runs once more to update its
// document. Expiry (expire.go) is one TTL index's scan-and-delete, batch
// by batch, each admitted by the caller. exec decides nothing about
// sessions, retryable writes, transactions or write concern: those wrap
// the handler, and reach storage through the On they are given.
//
// Pipelines are stages as push operators ($match, $project, $group,
// $sort, $unwind, $lookup, ...) that take documents one at a time and pass
// what they produce to the next, ending in a sink. A pipeline that reads
// a $text search carries each document's text score beside it, never in
// it, for {$meta: "textScore"} in the later stages (meta.go).
//
// exec never builds SQL and never talks to PostgreSQL itself: reads and
// writes go through the Store interface, whose methods take where the work runs as
// a parameter (exec puts nothing in a context for storage); the SQL of a
// prefilter comes from internal/query and the statements from
// internal/storage. Where a stage needs another collection ($lookup,
// $graphLookup, $unionWith) it reads through the Reader the handler
// passes in Env, and $out and $merge write through the Env's Output:
// the handler's is a StoreOutput (output.go) over OutStore, which fills
// $out's new collection and swaps it in, or drops it on failure, and
// reads and replaces $merge's matches a batch at a time, asking the
// handler only whether the target may be written (Check). A change
// stream's cursor is a ChangeSource (changes.go) over a ChangeStream
// (*changes.Stream): it shapes the changes as events, looks up full
// documents through Store, runs the stages after $changeStream and keeps
// the resume token, reading and waiting with the request's admission
// given back (Idle). It
// holds no session state (the cursor registry is the command layer's).
// It never holds more than the memory limit (MaxMemoryBytes) in a
// blocking stage or an in-memory sort ($sort and $group, when allowed,
// spill to unlinked temporary files instead; a find's sort is refused
// past it), never returns a batch larger than a reply can hold
// (MaxBatchBytes), and never ignores a stage, option or operator it does
// not implement: those are refused with MongoDB's codes.
//
// Its operators, reads and writes alike, are tested without PostgreSQL,
// over fakes built on exectest.Table, one collection in memory with
// storage's scan and compare-and-swap semantics (fakestore_test.go,
// fakewrite_test.go, whose rival writers make compare-and-swaps lose),
// and over exectest.Store, a catalog of them (StoreOutput; the command
// layer's handler tests use it too); the real storage is tested in
// internal/storage and through pytest.
package exec
