// Package baseline is `tierdb-bench baseline`: what tierdb costs on top of
// the PostgreSQL it stores data in.
//
// One invocation starts a single PostgreSQL server (internal/bench/rig) and
// a tierdb server that stores its data in it, then drives four operations
// with 16 concurrent clients: find by _id, insert, update by _id, and
// update of one hot document by every client (its row lock). Each
// operation runs once through the official MongoDB Go driver against tierdb
// ("tierdb") and once as the equivalent SQL sent with pgx straight to the
// same PostgreSQL ("direct"). The variants alternate for several rounds;
// the report gives the median ops/s, p50 and p99 of each, the throughput
// ratio and the p50 latency tierdb adds, checked against the project's aims:
// tierdb reaches at least 60% of direct throughput and adds at most 150 µs
// at p50. It also samples how much CPU tierdb and PostgreSQL spend per
// operation, which is what explains a missed aim on a small machine.
//
// Latencies go into internal/bench's histogram, and the report describes
// the machine and lists the aims as the scenarios' reports do.
//
// On a machine with two or more CPUs the servers (postgres and tierdb) are
// pinned to CPU 1 and the load generator to CPU 0 (--pin), so the client
// side does not steal CPU from the side being measured.
//
// Results go to stdout as a Markdown table, to bench-results/baseline.md and,
// with every round's raw figures, to bench-results/baseline.json.
//
// It must never touch a PostgreSQL or tierdb server it did not start, nor
// leave one running: everything lives in a fresh directory under /tmp that
// is removed at the end, and the servers are stopped on exit and on SIGINT
// or SIGTERM.
package baseline
