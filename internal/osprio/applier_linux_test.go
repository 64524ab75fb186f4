package osprio

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

func TestApplierSetsSessionNice(t *testing.T) {
	if !AutogroupsEnabled() {
		t.Skip("this kernel does not group tasks by session")
	}
	pid := startSessionLeader(t)
	a := NewApplier()
	for range 2 {
		if err := a.Apply(pid, Settings{Nice: intp(3), Session: intp(6)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.Syscalls(); n != 2 {
		t.Fatalf("two equal Applies made %d syscalls, want 2", n)
	}
	if got, err := SessionNice(pid); err != nil || got != 6 {
		t.Errorf("SessionNice = %d, %v; want 6", got, err)
	}
	if got := procStatNice(t, pid); got != 3 {
		t.Errorf("nice = %d, want 3", got)
	}
	if err := a.Apply(pid, Settings{Session: intp(0)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := SessionNice(pid); got != 0 || a.Syscalls() != 3 {
		t.Errorf("session nice %d after %d syscalls; want 0 after 3", got, a.Syscalls())
	}
	// Refused (not a session leader): forgotten, so tried again next time.
	member := startSleeper(t)
	for range 2 {
		if err := a.Apply(member, Settings{Session: intp(4)}); !IsInvalid(err) {
			t.Fatalf("Apply(session nice of a non-leader) = %v, want invalid", err)
		}
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

func durp(d time.Duration) *time.Duration { return &d }

// kernelKeepsSlices reports whether this kernel has custom slices (Linux
// 6.12, EEVDF); older kernels accept and ignore sched_runtime.
func kernelKeepsSlices(t *testing.T) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major > 6 || major == 6 && minor >= 12
}

func TestApplierSetsNiceAndSliceTogether(t *testing.T) {
	pid := startSleeper(t)
	a := NewApplier()
	if err := a.Apply(pid, Settings{Nice: intp(5), Slice: durp(200 * time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 1 {
		t.Fatalf("nice and slice took %d syscalls, want 1", n)
	}
	if got := procStatNice(t, pid); got != 5 {
		t.Errorf("nice = %d, want 5", got)
	}
	got, err := Slice(pid)
	if err != nil {
		t.Fatal(err)
	}
	if want := 200 * time.Microsecond; got != want && (got != 0 || kernelKeepsSlices(t)) {
		t.Errorf("slice = %v, want %v", got, want)
	}

	// The same again: nothing; the nice level alone: one call, slice kept.
	if err := a.Apply(pid, Settings{Nice: intp(5), Slice: durp(200 * time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(pid, Settings{Nice: intp(6), Slice: durp(200 * time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	if n := a.Syscalls(); n != 2 {
		t.Fatalf("%d syscalls after a repeat and a nice change, want 2", n)
	}
	if got := procStatNice(t, pid); got != 6 {
		t.Errorf("nice = %d, want 6", got)
	}

	// 0 is the kernel's default slice again.
	if err := a.Apply(pid, Settings{Nice: intp(6), Slice: durp(0)}); err != nil {
		t.Fatal(err)
	}
	if got, err := Slice(pid); err != nil || got == 200*time.Microsecond {
		t.Errorf("slice after 0 = %v, %v; want the kernel's default", got, err)
	}

	// A slice without a nice value, or out of range, reaches no kernel.
	before := a.Syscalls()
	if err := a.Apply(pid, Settings{Slice: durp(time.Millisecond)}); err == nil {
		t.Error("a slice without a nice value was accepted")
	}
	if err := a.Apply(pid, Settings{Nice: intp(6), Slice: durp(time.Microsecond)}); err == nil {
		t.Error("a 1µs slice was accepted")
	}
	if n := a.Syscalls(); n != before {
		t.Errorf("invalid settings made %d syscalls", n-before)
	}
	if got := procStatNice(t, pid); got != 6 {
		t.Errorf("nice = %d after refused settings, want 6", got)
	}
}

func TestSlicesSupportedMatchesTheKernel(t *testing.T) {
	if got, want := SlicesSupported(), kernelKeepsSlices(t); got != want {
		t.Errorf("SlicesSupported() = %v on this kernel, want %v", got, want)
	}
}
