package rig

import (
	"os"
	"slices"
	"testing"
	"time"

	"tierdb/internal/procfs"
)

func TestProcStatCPUTimes(t *testing.T) {
	st := ProcStat{procfs.Stat{UTime: 250, STime: 50, CUTime: 7, CSTime: 3}}
	if st.CPU() != 3*time.Second || st.CPUWithChildren() != 3100*time.Millisecond {
		t.Errorf("cpu %v, with children %v; want 3s and 3.1s", st.CPU(), st.CPUWithChildren())
	}
}

func TestCPUTimesFromProcStat(t *testing.T) {
	per, err := procfs.ParseCPUTimes([]byte("cpu  20 2 10 160 8 2 3 9 7 0\ncpu1 10 1 5 80 4 0 0 0 7 0\ncpu0 10 1 5 80 4 2 3 9 0 0\nintr 1 2 3\n"))
	if err != nil || len(per) != 2 {
		t.Fatalf("parsed %v, %v; want CPUs 0 and 1 only (the all-CPU and intr lines skipped)", per, err)
	}
	// Guest time (7) is already inside user time (10) and must not count twice.
	if c := cpuTimes(per[1]); c.Busy != 16 || c.Total() != 100 || c.Idle != 80 || c.IOWait != 4 {
		t.Errorf("got %+v total %d, want busy 16 idle 80 iowait 4 total 100", c, c.Total())
	}
	if c := cpuTimes(per[0]); c.Busy != 21 || c.Steal != 9 || c.Total() != 114 {
		t.Errorf("irq, softirq and steal: got %+v", c)
	}
}

func TestProcessTreeFindsThisProcess(t *testing.T) {
	tree, err := ProcessTree(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	if tree[0].PID != os.Getppid() {
		t.Errorf("tree starts at %d, not its root", tree[0].PID)
	}
	if !slices.ContainsFunc(tree, func(p Proc) bool { return p.PID == os.Getpid() }) {
		t.Error("this process is missing from its parent's tree")
	}
	if _, err := ProcessTree(-5); err == nil {
		t.Error("a nonexistent root should fail")
	}
}

func TestThreadIDsListsThisThread(t *testing.T) {
	tids, err := ThreadIDs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The main thread's ID is the process ID.
	if !slices.Contains(tids, os.Getpid()) {
		t.Errorf("threads %v lack the main thread %d", tids, os.Getpid())
	}
}
