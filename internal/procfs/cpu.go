package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUTime is one CPU's line of /proc/stat, in clock ticks (USER_HZ): Busy
// is time spent running tasks (user, nice, system; guest time is part of
// user), IRQ time spent on interrupts (irq, softirq), which the kernel may
// charge to no task, Idle and IOWait time with nothing to run, and Steal
// time the hypervisor gave to other machines.
type CPUTime struct {
	Busy, IRQ, Idle, IOWait, Steal uint64
}

// ReadCPUTimes reads /proc/stat's per-CPU lines by CPU number (a CPU that
// is offline has no line).
func ReadCPUTimes() (map[int]CPUTime, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return ParseCPUTimes(b)
}

// ParseCPUTimes parses the contents of /proc/stat; the all-CPU line and
// the other counters are skipped.
func ParseCPUTimes(b []byte) (map[int]CPUTime, error) {
	out := map[int]CPUTime{}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "cpu")
		if !ok || rest == "" || rest[0] < '0' || rest[0] > '9' {
			continue
		}
		f := strings.Fields(rest)
		id, err := strconv.Atoi(f[0])
		if err != nil || len(f) < 9 {
			return nil, fmt.Errorf("procfs: malformed /proc/stat line %q", line)
		}
		// f[1:9]: user nice system idle iowait irq softirq steal.
		var v [8]uint64
		for k := range v {
			if v[k], err = strconv.ParseUint(f[1+k], 10, 64); err != nil {
				return nil, fmt.Errorf("procfs: malformed /proc/stat line %q", line)
			}
		}
		out[id] = CPUTime{Busy: v[0] + v[1] + v[2], IRQ: v[5] + v[6], Idle: v[3], IOWait: v[4], Steal: v[7]}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("procfs: no per-CPU lines in /proc/stat")
	}
	return out, nil
}

// Children lists the child processes of process pid: those started by any
// of its threads (/proc/<pid>/task/<tid>/children, Linux 3.5 and later
// with CONFIG_PROC_CHILDREN).
func Children(pid int) ([]int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	read := 0
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread ended meanwhile, or no such file here
			}
			return nil, err
		}
		read++
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				out = append(out, child)
			}
		}
	}
	if read == 0 && len(tasks) > 0 {
		return nil, fmt.Errorf("procfs: %s/*/children not found (a kernel without CONFIG_PROC_CHILDREN?)", dir)
	}
	return out, nil
}
