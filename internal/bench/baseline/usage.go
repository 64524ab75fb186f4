package baseline

import (
	"maps"
	"slices"
	"time"

	"tierdb/internal/bench/rig"
)

// usage is the CPU the servers spent during a run's measured window.
type usage struct {
	// Per operation, in µs of CPU time: tierdb's process, and all of
	// PostgreSQL's processes (backends, WAL writer, checkpointer, …).
	TierdbCPUusPerOp   float64 `json:"tierdbCpuUsPerOp"`
	PostgresCPUusPerOp float64 `json:"postgresCpuUsPerOp"`
	// CPUBusyPct is each CPU's busy share, whoever used it.
	CPUBusyPct []float64 `json:"cpuBusyPct"`
}

// probe knows which processes are the servers.
type probe struct {
	tierdbPID     int
	postmasterPID int
}

type snapshot struct {
	tierdb   time.Duration
	postgres map[int]time.Duration // by PID
	cpus     map[int]rig.CPUTimes
}

// snapshot reads the counters; a counter it cannot read stays zero, which
// shows up as an implausible figure rather than a failed benchmark.
func (p probe) snapshot() snapshot {
	var s snapshot
	if st, err := rig.ReadProcStat(p.tierdbPID); err == nil {
		s.tierdb = st.CPU()
	}
	s.postgres = map[int]time.Duration{}
	if tree, err := rig.ProcessTree(p.postmasterPID); err == nil {
		for _, proc := range tree {
			s.postgres[proc.PID] = proc.CPU()
		}
	}
	s.cpus, _ = rig.ReadCPUTimes()
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
		// Steal counts as busy: the CPU was not free for the servers.
		if b.Total() > a.Total() {
			pct = 100 * float64(notIdle(b)-notIdle(a)) / float64(b.Total()-a.Total())
		}
		u.CPUBusyPct = append(u.CPUBusyPct, pct)
	}
	return u
}

func notIdle(c rig.CPUTimes) uint64 { return c.Busy + c.Steal }
