// Command tierdb is the tierdb server and its tools.
//
//	tierdb serve [flags]   run the server (embedded PostgreSQL unless --postgres-url)
//	tierdb dump --out DIR  back up its database with pg_dump (dump.go)
//	tierdb restore --in DIR  restore a backup into an empty data directory
//	tierdb version         version, commit, Go, MongoDB wire and PostgreSQL versions
//
// The benchmark harness is a separate binary, cmd/tierdb-bench, so that
// this one links none of its load generators and plotting code
// (TestServerLinksNoHarness).
//
// It parses flags and wires the layers together in start order (PostgreSQL,
// QoS, storage, command table, listener, metrics); it must never hold logic
// that belongs to a layer.
package main
