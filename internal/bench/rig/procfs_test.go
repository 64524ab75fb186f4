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

func TestParseCPULine(t *testing.T) {
	c, n, ok := parseCPULine("cpu1 10 1 5 80 4 0 0 0 7 0")
	if !ok || n != 1 {
		t.Fatalf("not parsed: %v %v", n, ok)
	}
	// Guest time (7) is already inside user time (10) and must not count twice.
	if c.Busy != 16 || c.Total() != 100 || c.Idle != 80 || c.IOWait != 4 {
		t.Errorf("got %+v total %d, want busy 16 idle 80 iowait 4 total 100", c, c.Total())
	}
	if c, _, _ := parseCPULine("cpu0 10 1 5 80 4 2 3 9 0 0"); c.Busy != 21 || c.Steal != 9 || c.Total() != 114 {
		t.Errorf("irq, softirq and steal: got %+v", c)
	}
	if _, _, ok := parseCPULine("cpu  10 1 5 80 4 0 0 0 0 0"); ok {
		t.Error("the all-CPU line must be skipped")
	}
	if _, _, ok := parseCPULine("intr 1 2 3"); ok {
		t.Error("non-CPU line accepted")
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
