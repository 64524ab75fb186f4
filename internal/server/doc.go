// Package server accepts client connections and runs one goroutine per
// connection: it reads wire messages, hands commands to the command table and
// writes the replies.
//
// A second goroutine per connection keeps reading while a request runs, so a
// client that disconnects cancels its request at once. server must never
// interpret commands itself (beyond unwrapping legacy OP_QUERY) and never
// touch storage.
package server
