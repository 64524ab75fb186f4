package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"tierdb/internal/procfs"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times. It is part of the
// kernel ABI and 100 on every Linux architecture Go runs on.
const clockTicks = 100

// ProcStat is a process's /proc/PID/stat; times are in clock ticks.
type ProcStat struct{ procfs.Stat }

// CPU is the CPU time the process itself has used (user + system).
func (s ProcStat) CPU() time.Duration { return ticks(s.UTime + s.STime) }

// CPUWithChildren adds the time of its reaped children, which moves into
// the parent's counters when they are waited for.
func (s ProcStat) CPUWithChildren() time.Duration {
	return ticks(s.UTime + s.STime + s.CUTime + s.CSTime)
}

func ticks(n uint64) time.Duration { return time.Duration(n) * time.Second / clockTicks }

// ReadProcStat reads /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	st, err := procfs.ReadStat(pid)
	return ProcStat{st}, err
}

// Proc is one process of a tree.
type Proc struct {
	PID int
	ProcStat
}

// ProcessTree returns root and all its descendants, root first, parents
// before their children. Processes that exit while it runs are left out.
func ProcessTree(root int) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	stats := map[int]ProcStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadProcStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		stats[pid] = st
		children[st.PPID] = append(children[st.PPID], pid)
	}
	if _, ok := stats[root]; !ok {
		return nil, fmt.Errorf("process %d is gone", root)
	}
	// Walking parent → children, not by PID order: after PID wrap-around a
	// parent can have a larger PID than its children.
	tree := []Proc{{PID: root, ProcStat: stats[root]}}
	for i := 0; i < len(tree); i++ {
		for _, c := range children[tree[i].PID] {
			tree = append(tree, Proc{PID: c, ProcStat: stats[c]})
		}
	}
	return tree, nil
}

// ThreadIDs lists the threads of pid.
func ThreadIDs(pid int) ([]int, error) {
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

// CPUTimes are one CPU's cumulative counters from /proc/stat, in clock
// ticks. Busy is user, nice, system, irq and softirq; guest time is already
// inside user time.
type CPUTimes struct {
	Busy, Idle, IOWait, Steal uint64
}

// Total is every tick the CPU has counted.
func (c CPUTimes) Total() uint64 { return c.Busy + c.Idle + c.IOWait + c.Steal }

// ReadCPUTimes returns the counters of each CPU by number.
func ReadCPUTimes() (map[int]CPUTimes, error) {
	per, err := procfs.ReadCPUTimes()
	if err != nil {
		return nil, err
	}
	out := make(map[int]CPUTimes, len(per))
	for n, c := range per {
		out[n] = cpuTimes(c)
	}
	return out, nil
}

// cpuTimes counts interrupts as busy: the harness asks how busy a CPU was,
// not for whom.
func cpuTimes(c procfs.CPUTime) CPUTimes {
	return CPUTimes{Busy: c.Busy + c.IRQ, Idle: c.Idle, IOWait: c.IOWait, Steal: c.Steal}
}
