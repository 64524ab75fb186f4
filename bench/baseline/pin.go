package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// The CPU layout on a two-core machine: the load generator must not take
// CPU time from the servers it measures.
const (
	loadCPU   = 0
	serverCPU = 1
)

// pinnedEnv is set on the re-executed process, so a pin that did not take
// cannot re-execute forever.
const pinnedEnv = "TIERDB_BENCH_PINNED"

// pinSelf makes this whole process run on cpu. Changing the affinity of a
// running Go program would have to catch every runtime thread, so instead
// it re-executes itself under taskset, and every thread then inherits the
// affinity from the start (and the runtime sizes GOMAXPROCS to it).
// It returns only if the process already runs on cpu alone.
func pinSelf(cpu int) error {
	want := strconv.Itoa(cpu)
	got, err := cpuList(os.Getpid())
	if err != nil {
		return err
	}
	if got == want {
		return nil
	}
	if os.Getenv(pinnedEnv) != "" {
		return fmt.Errorf("still allowed CPUs %s after re-executing under taskset -c %s", got, want)
	}
	if n := onlineCPUs(); n < 2 {
		return fmt.Errorf("pinning needs two CPUs and this machine has %d; use --pin=false", n)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pinning needs taskset (util-linux), or use --pin=false: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{"taskset", "-c", want, exe}, os.Args[1:]...)
	return syscall.Exec(taskset, argv, append(os.Environ(), pinnedEnv+"=1"))
}

// pinTree moves a process and all its descendants, every thread of each, to
// cpu. Processes they fork later inherit it. It returns how many processes
// it moved.
func pinTree(root, cpu int) (int, error) {
	tree, err := processTree(root)
	if err != nil {
		return 0, err
	}
	for pid := range tree {
		out, err := exec.Command("taskset", "-a", "-c", "-p", strconv.Itoa(cpu), strconv.Itoa(pid)).CombinedOutput()
		if err != nil {
			if _, gone := readProcStat(pid); gone != nil {
				continue // exited meanwhile, e.g. an autovacuum worker
			}
			return 0, fmt.Errorf("taskset on process %d: %v: %s", pid, err, out)
		}
	}
	return len(tree), nil
}

// taskset wraps a command line so it runs on cpu.
func taskset(cpu int, argv []string) []string {
	return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
}
