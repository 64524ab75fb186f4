package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat. It is part of
// the kernel ABI and 100 on every architecture Go supports on Linux.
const userHZ = 100

// procStat is what the benchmark needs from /proc/<pid>/stat.
type procStat struct {
	ppid int
	cpu  time.Duration // user + system time
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses a /proc/<pid>/stat line. The command name is in
// parentheses and may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed stat line %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("short stat line %q", b)
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseUint(f[11], 10, 64)
	stime, err3 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, fmt.Errorf("malformed stat line %q", b)
	}
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * time.Second / userHZ}, nil
}

// processTree returns root and all its descendants with their stats.
// Processes that exit while it runs are left out.
func processTree(root int) (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(pid); err == nil {
			all[pid] = st
		}
	}
	if _, ok := all[root]; !ok {
		return nil, fmt.Errorf("process %d is gone", root)
	}
	tree := map[int]procStat{root: all[root]}
	// Parents can have larger PIDs than their children after PID wrap-around,
	// so repeat until no process joins.
	for grew := true; grew; {
		grew = false
		for pid, st := range all {
			if _, in := tree[pid]; !in {
				if _, parentIn := tree[st.ppid]; parentIn {
					tree[pid] = st
					grew = true
				}
			}
		}
	}
	return tree, nil
}

// cpuCounters are one CPU's cumulative jiffies from /proc/stat.
type cpuCounters struct{ busy, total uint64 }

// readCPUCounters returns the per-CPU lines of /proc/stat, indexed by CPU
// number.
func readCPUCounters() (map[int]cpuCounters, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int]cpuCounters{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if c, n, ok := parseCPULine(sc.Text()); ok {
			out[n] = c
		}
	}
	return out, sc.Err()
}

// parseCPULine parses "cpuN user nice system idle iowait irq softirq steal
// ...". Idle and iowait count as not busy; guest time is already included
// in user time, so only the first eight fields are summed.
func parseCPULine(line string) (cpuCounters, int, bool) {
	f := strings.Fields(line)
	if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
		return cpuCounters{}, 0, false
	}
	n, err := strconv.Atoi(f[0][3:])
	if err != nil {
		return cpuCounters{}, 0, false
	}
	var c cpuCounters
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuCounters{}, 0, false
		}
		c.total += v
		if i != 3 && i != 4 {
			c.busy += v
		}
	}
	return c, n, true
}

// cpuList reads a process's Cpus_allowed_list ("0-1", "1") from
// /proc/<pid>/status.
func cpuList(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no Cpus_allowed_list for process %d", pid)
}
