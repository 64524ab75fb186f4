// Package bench is tierdb's evaluation harness (`tierdb-bench`, cmd/tierdb-bench): it re-runs
// the experiments of the RT-MongoDB papers (time-sensitive clients against
// YCSB-style noise, with the priority channel off and on) against tierdb,
// side by side, and writes raw results, a summary table, a Markdown report
// with the acceptance targets marked PASS or MISS, and plots.
//
// A scenario (YAML, see Scenario) names client groups (count, tier, YCSB
// operation mix, closed loop or fixed rate, when they start and how long they
// run) and server variants (QoS off, QoS on with a threshold, CPU pools …).
// Run starts one private PostgreSQL, loads the records once, then for every
// repetition measures the time-sensitive groups alone on an idle server (the
// baseline) and each variant in turn, each on a fresh tierdb process on that
// PostgreSQL, the variants' order rotating by one each repetition. Every operation's latency goes into a histogram; throughput is
// kept per 100 ms; time-sensitive groups also keep (time, latency) samples.
//
// With replicas (Scenario.Replicas) the PostgreSQL is a primary with hot
// standbys, each node optionally in its own CPU-capped cgroup (equal
// capacity on one machine); groups route reads by read preference
// (including tierdb's adaptive), an S group (seed 001's S workload) measures
// client-observed staleness against the bound, and each run polls
// replSetGetStatus for the reads each node served, giving per-period series
// of read throughput, p80 read latency, share on standbys and balance
// fraction (seed 001's Fig. 2).
//
// On a machine with two or more CPUs the server side (PostgreSQL and tierdb)
// and the load generator run on disjoint CPUs ("split" layout), so the load
// generator does not take CPU from what it measures.
//
// This package must never touch a PostgreSQL or tierdb it did not start,
// never leave one running (everything lives in a temporary directory that is
// removed at the end, and the children die with the harness), and never
// loosen an acceptance target to make it pass: a missed target is a finding
// to report, not an error.
package bench
