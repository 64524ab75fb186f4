// Package commands is the command table: one entry per MongoDB command name,
// each a small handler, all wrapped once (in Dispatch) with metrics, admission
// hooks and the mapping of every error to a MongoDB code (errors.go).
//
// Handlers parse their arguments, call exec (which runs reads, sorts,
// cursors' operators, pipelines, $out and $merge's writes
// (exec.StoreOutput), change streams' cursors (exec.ChangeSource) and the
// write statements of insert, update, delete and findAndModify), query
// and update, and build the reply document (writeErrors, upserted,
// lastErrorObject). They reach storage only through Store (store.go):
// interfaces by role (exec.Store, exec.OutStore, Catalog, Views, Stats,
// Backends, SessionRecords, ChangeSwitch) that *storage.Store satisfies,
// so the table runs over a fake in tests (handlers_test.go and
// handlers_args_test.go dispatch OP_MSG commands over exectest.Store,
// without PostgreSQL). Retryable writes, transactions
// and write concern wrap the handlers; a statement interrupted by
// maxTimeMS or killOp fails the whole write command (writeReply).
// The cursor registry (cursor.go) holds exec.Sources with their session
// state: owner, namespace, idle time, what remains of maxTimeMS.
// Background work (the TTL monitor, ttl.go, whose scan-and-delete is
// exec.Expiry) goes through the same admission as clients, at the low
// tier.
//
// Where a request's storage work runs is an explicit storage.On, never a
// context value: run builds it from the tier admission decided, the
// transaction wrappers add the session's transaction, the write concern
// its commit mode (j:false), and a read handler the node the router chose
// (routeRead). Handlers pass it down to every storage call and into the
// Reader, Output, exec.Read and exec.Write they give exec; a cursor's source keeps
// only its node, and reads each getMore with that request's On.
//
// Handlers must never write to the network, never build SQL (that is
// storage's and query's job), never run a query's scan, sort or pipeline
// themselves, nor a write's compare-and-swap loop (exec's), and never put
// internal error text in a reply.
package commands
