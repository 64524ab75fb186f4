// Package rig is the process machinery tierdb-bench's two experiments
// share (the scenarios, internal/bench, and `tierdb-bench baseline`,
// internal/bench/baseline): it starts a private PostgreSQL and tierdb
// processes on it, pins processes to CPUs, reads the CPU counters in /proc
// and describes the machine.
//
// It must never touch a PostgreSQL or tierdb it did not start, nor leave
// one running: each PostgreSQL lives in a fresh directory under /tmp that
// Stop removes, and tierdb processes die with the process that started
// them. It holds no measurement policy (what to run, what to report): that
// belongs to the programs using it.
package rig
