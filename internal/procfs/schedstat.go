package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// SchedStat is /proc/<pid>/schedstat: how long the process's main thread
// ran on a CPU, how long it waited on a run queue for one, and in how many
// timeslices it ran. Kernels without schedstats (CONFIG_SCHED_INFO) have
// no such file.
type SchedStat struct {
	Run, Wait time.Duration
	Slices    uint64
}

// ReadSchedStat reads /proc/<pid>/schedstat.
func ReadSchedStat(pid int) (SchedStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return SchedStat{}, err
	}
	return ParseSchedStat(b)
}

// ParseSchedStat parses a schedstat line: three numbers, the first two in
// nanoseconds.
func ParseSchedStat(b []byte) (SchedStat, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return SchedStat{}, fmt.Errorf("procfs: malformed schedstat line %q", b)
	}
	var n [3]uint64
	for k := range n {
		v, err := strconv.ParseUint(f[k], 10, 64)
		if err != nil {
			return SchedStat{}, fmt.Errorf("procfs: malformed schedstat line %q", b)
		}
		n[k] = v
	}
	return SchedStat{Run: time.Duration(n[0]), Wait: time.Duration(n[1]), Slices: n[2]}, nil
}
