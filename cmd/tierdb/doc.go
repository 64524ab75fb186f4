// Command tierdb is the tierdb server and its tools.
//
//	tierdb serve [flags]   run the server (embedded PostgreSQL unless --postgres-url)
//	tierdb bench <name>    run an evaluation scenario and write a report
//
// It parses flags and wires the layers together in start order (PostgreSQL,
// QoS, storage, command table, listener, metrics); it must never hold logic
// that belongs to a layer.
package main
