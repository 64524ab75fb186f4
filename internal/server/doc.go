// Package server accepts client connections and runs one goroutine per
// connection: it reads wire messages, hands commands to the command table and
// writes the replies.
//
// While a request runs longer than a few milliseconds, a second goroutine
// watches the socket (without reading from it), so a client that disconnects
// cancels its request. server must never
// interpret commands itself (beyond unwrapping legacy OP_QUERY) and never
// touch storage.
package server
