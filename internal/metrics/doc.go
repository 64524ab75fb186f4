// Package metrics is tierdb's Prometheus layer on client_golang: the
// registry (with Go's runtime and the process collectors and
// tierdb_build_info), the HTTP listener of --metrics-listen, and Writer,
// which turns figures other packages keep (counters, queue lengths,
// per-user weights) into constant metrics at scrape time. Durations are
// real histograms, observed where they happen (internal/commands).
//
// Labels are bounded by construction (tier, command name from the command
// table, result code, node, user names that administrators create): it
// must never take a label value from client input that is not checked
// against a fixed set, and never block a request. docs/metrics.md lists
// every metric.
package metrics
