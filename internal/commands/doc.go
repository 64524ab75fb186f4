// Package commands is the command table: one entry per MongoDB command name,
// each a small handler, all wrapped once (in Dispatch) with metrics, admission
// hooks and the mapping of every error to a MongoDB code (errors.go).
//
// Handlers parse their arguments, call exec (which runs reads, sorts,
// cursors' operators and pipelines over its Store interface), storage for
// catalog work and writes, query and update, and build the reply document.
// The cursor registry (cursor.go) holds exec.Sources with their session
// state: owner, namespace, idle time, what remains of maxTimeMS.
// Background work (the TTL monitor, ttl.go) goes through the same
// admission as clients, at the low tier. Handlers must never write to the
// network, never build SQL (that is storage's and query's job), never run
// a query's scan, sort or pipeline themselves (exec's) and never put
// internal error text in a reply.
package commands
