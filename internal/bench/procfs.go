package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times; 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

// procStat holds the fields of /proc/PID/stat the harness uses.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime uint64 // clock ticks
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may itself hold spaces and
	// parentheses; the fields after the last ')' are plain numbers.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime…cstime fields 14–17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	num := func(k int) uint64 { v, _ := strconv.ParseUint(f[k], 10, 64); return v }
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, utime: num(11), stime: num(12), cutime: num(13), cstime: num(14)}, nil
}

// processCPU is the CPU seconds pid itself has used.
func processCPU(pid int) float64 {
	st, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return float64(st.utime+st.stime) / clockTicks
}

// treeCPU is the CPU seconds used by root and all its descendants, living
// or reaped (a reaped child's time moves into its parent's cutime/cstime).
func treeCPU(root int) float64 {
	tree, stats := processTree(root)
	var ticks uint64
	for _, pid := range tree {
		st := stats[pid]
		ticks += st.utime + st.stime + st.cutime + st.cstime
	}
	return float64(ticks) / clockTicks
}

// processTree lists root and its descendants, with their stat.
func processTree(root int) ([]int, map[int]procStat) {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		stats[pid] = st
		children[st.ppid] = append(children[st.ppid], pid)
	}
	if _, ok := stats[root]; !ok {
		return nil, stats
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, stats
}

// threadIDs lists the threads of pid.
func threadIDs(pid int) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

// cpuTimes are one CPU's counters from /proc/stat, in clock ticks.
type cpuTimes struct {
	busy, idle, iowait, steal uint64
}

// readCPUTimes returns the counters of each CPU by number.
func readCPUTimes() (map[int]cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	out := map[int]cpuTimes{}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var v [8]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		// user nice system idle iowait irq softirq steal
		out[id] = cpuTimes{busy: v[0] + v[1] + v[2] + v[5] + v[6], idle: v[3], iowait: v[4], steal: v[7]}
	}
	if len(out) == 0 {
		return nil, errors.New("/proc/stat lists no CPUs")
	}
	return out, nil
}

// cpuShares returns busy, steal and iowait percentages of cpus between two
// readings.
func cpuShares(a, b map[int]cpuTimes, cpus []int) (busy, steal, iowait float64) {
	var d cpuTimes
	for _, c := range cpus {
		d.busy += b[c].busy - a[c].busy
		d.idle += b[c].idle - a[c].idle
		d.iowait += b[c].iowait - a[c].iowait
		d.steal += b[c].steal - a[c].steal
	}
	total := float64(d.busy + d.idle + d.iowait + d.steal)
	if total == 0 {
		return 0, 0, 0
	}
	return 100 * float64(d.busy) / total, 100 * float64(d.steal) / total, 100 * float64(d.iowait) / total
}
