// Package metrics serves Prometheus text-format metrics over HTTP and gives
// other packages small lock-free instruments (counters and histograms with
// fixed buckets) to record into.
//
// Labels are bounded by construction (tier, command name from the command
// table, result code): it must never take a label value from client input
// that is not checked against a fixed set, and never block a request.
package metrics
