// Package exec runs queries: the reads of find, count, distinct, the read
// halves of update, delete and findAndModify, and aggregation pipelines.
// Command handlers parse a command's arguments, call exec and reply.
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
// describes them without reading. TextRead runs a $text search
// (text.go), TailSource a tailable cursor (tail.go), Distinct gathers
// distinct's values.
//
// Pipelines are stages as push operators ($match, $project, $group,
// $sort, $unwind, $lookup, ...) that take documents one at a time and pass
// what they produce to the next, ending in a sink. A pipeline that reads
// a $text search carries each document's text score beside it, never in
// it, for {$meta: "textScore"} in the later stages (meta.go).
//
// exec never builds SQL and never talks to PostgreSQL itself: reads go
// through the Store interface, whose methods take where the work runs as
// a parameter (exec puts nothing in a context for storage); the SQL of a
// prefilter comes from internal/query and the statements from
// internal/storage. Where a stage needs another collection ($lookup,
// $graphLookup, $unionWith) it reads through the Reader the handler
// passes in Env, and $out and $merge write through the Env's Output. It
// holds no session state (the cursor registry is the command layer's).
// It never holds more than the memory limit (MaxMemoryBytes) in a
// blocking stage or an in-memory sort ($sort and $group, when allowed,
// spill to unlinked temporary files instead; a find's sort is refused
// past it), never returns a batch larger than a reply can hold
// (MaxBatchBytes), and never ignores a stage, option or operator it does
// not implement: those are refused with MongoDB's codes.
//
// Its operators are tested without PostgreSQL, over a fake Store
// (fakestore_test.go); the real storage is tested in internal/storage and
// through pytest.
package exec
