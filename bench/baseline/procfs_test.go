package main

import (
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	line := "4242 (post gres: (x)) S 77 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 123 456 78 18446744073709551615\n"
	st, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 77 || st.cpu != 3*time.Second {
		t.Errorf("got ppid %d cpu %v, want 77 and 3s", st.ppid, st.cpu)
	}
	if _, err := parseProcStat([]byte("12 (x) S 1")); err == nil {
		t.Error("short line accepted")
	}
}

func TestParseCPULine(t *testing.T) {
	c, n, ok := parseCPULine("cpu1 10 1 5 80 4 0 0 0 7 0")
	if !ok || n != 1 {
		t.Fatalf("not parsed: %v %v", n, ok)
	}
	// Guest time (7) is already inside user time (10) and must not count twice.
	if c.busy != 16 || c.total != 100 {
		t.Errorf("busy %d total %d, want 16 and 100", c.busy, c.total)
	}
	if _, _, ok := parseCPULine("cpu  10 1 5 80 4 0 0 0 0 0"); ok {
		t.Error("the all-CPU line must be skipped")
	}
	if _, _, ok := parseCPULine("intr 1 2 3"); ok {
		t.Error("non-CPU line accepted")
	}
}

func TestProcessTreeFindsThisProcess(t *testing.T) {
	tree, err := processTree(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tree[os.Getpid()]; !ok {
		t.Error("this process is missing from its parent's tree")
	}
	if _, err := processTree(-5); err == nil {
		t.Error("a nonexistent root should fail")
	}
}

func TestUsageUntil(t *testing.T) {
	a := snapshot{
		tierdb:   time.Second,
		postgres: map[int]time.Duration{1: time.Second, 2: time.Second},
		cpus:     map[int]cpuCounters{0: {busy: 10, total: 100}, 1: {busy: 0, total: 100}},
	}
	b := snapshot{
		tierdb: 3 * time.Second,
		// PID 2 ended (its time is lost), PID 3 started (counts from zero).
		postgres: map[int]time.Duration{1: 2 * time.Second, 3: time.Second},
		cpus:     map[int]cpuCounters{0: {busy: 60, total: 200}, 1: {busy: 100, total: 200}},
	}
	u := a.until(b, 1000)
	if u.TierdbCPUusPerOp != 2000 || u.PostgresCPUusPerOp != 2000 {
		t.Errorf("per op: tierdb %v pg %v, want 2000 µs each", u.TierdbCPUusPerOp, u.PostgresCPUusPerOp)
	}
	if len(u.CPUBusyPct) != 2 || u.CPUBusyPct[0] != 50 || u.CPUBusyPct[1] != 100 {
		t.Errorf("busy = %v, want [50 100]", u.CPUBusyPct)
	}
}
