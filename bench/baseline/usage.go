package main

import (
	"maps"
	"slices"
	"time"
)

// usage is the CPU the servers spent during a run's measured window.
type usage struct {
	// Per operation, in µs of CPU time: tierdb's process, and all of
	// PostgreSQL's processes (backends, WAL writer, checkpointer, …).
	TierdbCPUusPerOp   float64 `json:"tierdb_cpu_us_per_op"`
	PostgresCPUusPerOp float64 `json:"postgres_cpu_us_per_op"`
	// CPUBusyPct is each CPU's busy share, whoever used it.
	CPUBusyPct []float64 `json:"cpu_busy_pct"`
}

// probe knows which processes are the servers.
type probe struct {
	tierdbPID     int
	postmasterPID int
}

type snapshot struct {
	tierdb   time.Duration
	postgres map[int]time.Duration // by PID
	cpus     map[int]cpuCounters
}

// snapshot reads the counters; a counter it cannot read stays zero, which
// shows up as an implausible figure rather than a failed benchmark.
func (p probe) snapshot() snapshot {
	var s snapshot
	if st, err := readProcStat(p.tierdbPID); err == nil {
		s.tierdb = st.cpu
	}
	s.postgres = map[int]time.Duration{}
	if tree, err := processTree(p.postmasterPID); err == nil {
		for pid, st := range tree {
			s.postgres[pid] = st.cpu
		}
	}
	s.cpus, _ = readCPUCounters()
	return s
}

// until is the usage between s and a later snapshot, over ops operations.
// PostgreSQL processes that started in between count from zero; those that
// ended in between are lost, which only short-lived autovacuum workers do.
func (s snapshot) until(later snapshot, ops uint64) usage {
	var u usage
	var pg time.Duration
	for pid, t := range later.postgres {
		pg += t - s.postgres[pid]
	}
	if ops > 0 {
		u.TierdbCPUusPerOp = micros(later.tierdb-s.tierdb) / float64(ops)
		u.PostgresCPUusPerOp = micros(pg) / float64(ops)
	}
	for _, n := range slices.Sorted(maps.Keys(later.cpus)) {
		a, b := s.cpus[n], later.cpus[n]
		pct := 0.0
		if b.total > a.total {
			pct = 100 * float64(b.busy-a.busy) / float64(b.total-a.total)
		}
		u.CPUBusyPct = append(u.CPUBusyPct, pct)
	}
	return u
}
