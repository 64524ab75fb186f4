package osprio

import (
	"sync"
	"testing"
)

func intp(n int) *int { return &n }

func TestApplierSkipsRepeats(t *testing.T) {
	pid := startSleeper(t)
	a := NewApplier()
	want := Settings{Nice: intp(7), CPUs: CPUSet{0}, IO: &IOPrio{IOClassBestEffort, 5}}

	if err := a.Apply(pid, want); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 3 {
		t.Fatalf("first Apply made %d syscalls, want 3", n)
	}
	if got := procStatNice(t, pid); got != 7 {
		t.Errorf("nice = %d, want 7", got)
	}
	if got := procStatus(t, pid, "Cpus_allowed_list"); got != "0" {
		t.Errorf("Cpus_allowed_list = %q, want 0", got)
	}
	if c, l, err := IOPriority(pid); err != nil || c != IOClassBestEffort || l != 5 {
		t.Errorf("IOPriority = %v/%d, %v", c, l, err)
	}

	// Same values, spelled differently where possible: no syscalls.
	same := Settings{Nice: intp(7), CPUs: CPUSet{0, 0}, IO: &IOPrio{IOClassBestEffort, 5}}
	for range 3 {
		if err := a.Apply(pid, same); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Apply(pid, Settings{}); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 3 {
		t.Fatalf("repeat Applies made %d more syscalls, want 0", n-3)
	}

	// One field changed: exactly one syscall.
	if err := a.Apply(pid, Settings{Nice: intp(8), CPUs: CPUSet{0}}); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 4 {
		t.Fatalf("changing nice made %d syscalls, want 1", n-3)
	}
	if got := procStatNice(t, pid); got != 8 {
		t.Errorf("nice = %d, want 8", got)
	}

	// After Forget everything is applied again.
	a.Forget(pid)
	if err := a.Apply(pid, Settings{Nice: intp(8), CPUs: CPUSet{0}, IO: &IOPrio{IOClassBestEffort, 5}}); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 7 {
		t.Fatalf("Apply after Forget made %d syscalls, want 3", n-4)
	}
}

func TestApplierTriesAllAndRetriesFailures(t *testing.T) {
	pid := startSleeper(t)
	a := NewApplier()
	// CPU 4000 is not online, so only the affinity call fails.
	s := Settings{Nice: intp(3), CPUs: CPUSet{4000}, IO: &IOPrio{IOClassIdle, 0}}

	err := a.Apply(pid, s)
	if err == nil || IsInvalid(err) {
		t.Fatalf("Apply = %v, want the kernel's affinity error", err)
	}
	if a.Syscalls() != 3 {
		t.Fatalf("Apply made %d syscalls, want all 3 attempted", a.Syscalls())
	}
	if got := procStatNice(t, pid); got != 3 {
		t.Errorf("nice = %d, want 3 despite the affinity failure", got)
	}
	if c, _, err := IOPriority(pid); err != nil || c != IOClassIdle {
		t.Errorf("IOPriority = %v, %v; want idle despite the affinity failure", c, err)
	}

	// The failed setting is retried; the applied ones are not.
	if err := a.Apply(pid, s); err == nil {
		t.Fatal("second Apply succeeded")
	}
	if a.Syscalls() != 4 {
		t.Fatalf("second Apply made %d syscalls, want 1 (the retry)", a.Syscalls()-3)
	}

	// A bad argument costs no syscall and does not stop the others.
	err = a.Apply(pid, Settings{Nice: intp(99), IO: &IOPrio{IOClassBestEffort, 1}})
	if !IsInvalid(err) {
		t.Fatalf("Apply with nice 99 = %v, want invalid", err)
	}
	if a.Syscalls() != 5 {
		t.Fatalf("made %d syscalls, want 1 (I/O only)", a.Syscalls()-4)
	}
	if c, l, _ := IOPriority(pid); c != IOClassBestEffort || l != 1 {
		t.Errorf("IOPriority = %v/%d, want best-effort/1", c, l)
	}
}

func TestApplierDeadProcess(t *testing.T) {
	pid := deadPID(t)
	a := NewApplier()
	err := a.Apply(pid, Settings{Nice: intp(1), CPUs: CPUSet{0}, IO: &IOPrio{IOClassIdle, 0}})
	if !IsNoSuchProcess(err) {
		t.Fatalf("Apply on dead pid = %v, want no such process", err)
	}
	if a.Syscalls() != 1 {
		t.Errorf("Apply on a dead pid made %d syscalls; it should stop after the first ESRCH", a.Syscalls())
	}
	if len(a.pids) != 0 {
		t.Errorf("Applier still remembers %d pid(s) after ESRCH", len(a.pids))
	}
	if err := a.Apply(0, Settings{Nice: intp(1)}); !IsInvalid(err) || a.Syscalls() != 1 {
		t.Errorf("Apply(pid 0) = %v after %d syscalls, want invalid and none", err, a.Syscalls())
	}
}

// Concurrent Applies to one process must leave the Applier's memory equal to
// the kernel's state; otherwise a later Apply would skip a needed syscall.
func TestApplierConcurrentMemoryMatchesKernel(t *testing.T) {
	pids := []int{startSleeper(t), startSleeper(t)}
	a := NewApplier()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				nice := 1 + (g+i)%3
				if err := a.Apply(pids[i%2], Settings{Nice: &nice}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, pid := range pids {
		for _, nice := range []int{1, 2, 3} {
			if err := a.Apply(pid, Settings{Nice: intp(nice)}); err != nil {
				t.Fatal(err)
			}
			if got := procStatNice(t, pid); got != nice {
				t.Fatalf("pid %d: Applier believes nice %d but kernel has %d", pid, nice, got)
			}
		}
	}
}
