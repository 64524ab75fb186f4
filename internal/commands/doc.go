// Package commands is the command table: one entry per MongoDB command name,
// each a small handler, all wrapped once (in Dispatch) with metrics, admission
// hooks and the mapping of every error to a MongoDB code (errors.go).
//
// Handlers parse their arguments, call storage, query and update, and build the
// reply document. Background work (the TTL monitor, ttl.go) goes through the
// same admission as clients, at the low tier.
//
// Where a request's storage work runs is an explicit storage.On, never a
// context value: run builds it from the tier admission decided, the
// transaction wrappers add the session's transaction, the write concern
// its commit mode (j:false), and a read handler the node the router chose
// (routeRead). Handlers pass it down to every storage call and into the
// Reader and Output they give exec; a cursor keeps only its node, and reads
// each getMore with that request's On.
//
// Handlers must never write to the network, never build SQL (that
// is storage's and query's job) and never put internal error text in a reply.
package commands
