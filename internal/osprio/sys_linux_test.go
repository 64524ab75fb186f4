package osprio

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNice(t *testing.T) {
	pid := startSleeper(t)

	if err := SetNice(pid, 10); err != nil {
		t.Fatal(err)
	}
	if got := procStatNice(t, pid); got != 10 {
		t.Errorf("/proc stat nice = %d, want 10", got)
	}
	if got, err := Nice(pid); err != nil || got != 10 {
		t.Errorf("Nice = %d, %v; want 10", got, err)
	}

	// Negative nice values need privilege; whether we have it must agree with
	// what CanRaisePriority claims.
	err := SetNice(pid, -5)
	if CanRaisePriority() {
		if err != nil {
			t.Fatalf("CanRaisePriority but SetNice(-5): %v", err)
		}
		if got := procStatNice(t, pid); got != -5 {
			t.Errorf("/proc stat nice = %d, want -5", got)
		}
		if got, err := Nice(pid); err != nil || got != -5 {
			t.Errorf("Nice = %d, %v; want -5", got, err)
		}
	} else if !IsPermission(err) {
		t.Fatalf("without privilege SetNice(-5) = %v, want a permission error", err)
	}
}

func TestSessionNice(t *testing.T) {
	if !AutogroupsEnabled() {
		t.Skip("this kernel does not group tasks by session")
	}
	pid := startSessionLeader(t)
	if err := SetSessionNice(pid, 7); err != nil {
		t.Fatal(err)
	}
	if got, err := SessionNice(pid); err != nil || got != 7 {
		t.Errorf("SessionNice = %d, %v; want 7", got, err)
	}
	if got := procStatNice(t, pid); got != 0 {
		t.Errorf("the process's own nice became %d; want it left at 0", got)
	}
	err := SetSessionNice(pid, -5)
	if CanRaisePriority() {
		if got, _ := SessionNice(pid); err != nil || got != -5 {
			t.Errorf("CanRaisePriority but SetSessionNice(-5) = %v, session nice %d", err, got)
		}
	} else if !IsPermission(err) {
		t.Errorf("without privilege SetSessionNice(-5) = %v, want a permission error", err)
	}

	// A process in this test's session: its autogroup is ours (and the
	// terminal's), which is not the package's to change. Under CI the test
	// may run in init's session, which has no autogroup (an empty file).
	mine := readAutogroup(t, os.Getpid())
	member := startSleeper(t)
	if err := SetSessionNice(member, 9); !IsInvalid(err) {
		t.Errorf("SetSessionNice(not a session leader) = %v, want invalid", err)
	}
	if got := readAutogroup(t, os.Getpid()); got != mine {
		t.Errorf("our own session's autogroup changed from %q to %q", mine, got)
	}
	if mine == "" {
		if _, err := SessionNice(os.Getpid()); !IsInvalid(err) {
			t.Errorf("SessionNice(process in the default group) = %v, want invalid", err)
		}
	}
	for _, n := range []int{-21, 20} {
		if err := SetSessionNice(pid, n); !IsInvalid(err) {
			t.Errorf("SetSessionNice(%d) = %v, want invalid", n, err)
		}
	}
	for _, p := range []int{0, -1} {
		if err := SetSessionNice(p, 5); !IsInvalid(err) {
			t.Errorf("SetSessionNice(pid %d) = %v, want invalid", p, err)
		}
	}
}

func readAutogroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(autogroupPath(pid))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNiceRejectsBadArguments(t *testing.T) {
	pid := startSleeper(t)
	for _, n := range []int{-21, 20, 100} {
		if err := SetNice(pid, n); !IsInvalid(err) {
			t.Errorf("SetNice(%d) = %v, want invalid", n, err)
		}
	}
	if got := procStatNice(t, pid); got != 0 {
		t.Errorf("a rejected SetNice changed nice to %d", got)
	}
	// PID 0 would mean this very process to the kernel.
	for _, p := range []int{0, -1} {
		if err := SetNice(p, 5); !IsInvalid(err) {
			t.Errorf("SetNice(pid %d) = %v, want invalid", p, err)
		}
		if _, err := Nice(p); !IsInvalid(err) {
			t.Errorf("Nice(pid %d) = %v, want invalid", p, err)
		}
	}
}

func TestAffinity(t *testing.T) {
	online, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	pid := startSleeper(t)

	if err := SetAffinity(pid, CPUSet{0}); err != nil {
		t.Fatal(err)
	}
	if got := procStatus(t, pid, "Cpus_allowed_list"); got != "0" {
		t.Errorf("Cpus_allowed_list = %q, want 0", got)
	}
	if got, err := Affinity(pid); err != nil || !slices.Equal(got, CPUSet{0}) {
		t.Errorf("Affinity = %v, %v; want [0]", got, err)
	}

	if err := SetAffinity(pid, online); err != nil {
		t.Fatal(err)
	}
	if got := procStatus(t, pid, "Cpus_allowed_list"); got != online.String() {
		t.Errorf("Cpus_allowed_list = %q, want %q", got, online)
	}
	if got, err := Affinity(pid); err != nil || !got.Equal(online) {
		t.Errorf("Affinity = %v, %v; want %v", got, err, online)
	}

	for _, bad := range []CPUSet{nil, {}, {-1}} {
		if err := SetAffinity(pid, bad); !IsInvalid(err) {
			t.Errorf("SetAffinity(%v) = %v, want invalid", []int(bad), err)
		}
	}
}

func TestAffinityOnlyOfflineCPUs(t *testing.T) {
	pid := startSleeper(t)
	// No online CPU in the mask: the kernel refuses with EINVAL, which is
	// reported as a system-call failure, not as a bad argument we caught.
	err := SetAffinity(pid, CPUSet{4000})
	if err == nil || IsInvalid(err) || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Fatalf("SetAffinity({4000}) = %v, want a kernel error naming pid %d", err, pid)
	}
}

func TestOnlineCPUsAndValidate(t *testing.T) {
	online, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) == 0 || !online.Contains(0) {
		t.Fatalf("OnlineCPUs = %v; CPU 0 is always online on Linux", online)
	}
	if err := ValidateCPUs(online); err != nil {
		t.Errorf("ValidateCPUs(online) = %v", err)
	}
	beyond := online[len(online)-1] + 1
	err = ValidateCPUs(CPUSet{0, beyond})
	if err == nil || !IsInvalid(err) {
		t.Fatalf("ValidateCPUs with CPU %d = %v, want invalid", beyond, err)
	}
	if !strings.Contains(err.Error(), "online CPUs are "+online.String()) {
		t.Errorf("error %q should list the online CPUs %s", err, online)
	}
	if err := ValidateCPUs(CPUSet{}); !IsInvalid(err) {
		t.Errorf("ValidateCPUs(empty) = %v, want invalid", err)
	}
}

func TestIOPriority(t *testing.T) {
	pid := startSleeper(t)

	for _, p := range []IOPrio{{IOClassIdle, 0}, {IOClassBestEffort, 6}, {IOClassBestEffort, 0}} {
		if err := SetIOPriority(pid, p.Class, p.Level); err != nil {
			t.Fatalf("SetIOPriority(%v): %v", p, err)
		}
		class, level, err := IOPriority(pid)
		if err != nil || class != p.Class || level != p.Level {
			t.Errorf("after setting %v IOPriority = %v/%d, %v", p, class, level, err)
		}
	}

	// Real time needs privilege; as root it must work.
	err := SetIOPriority(pid, IOClassRT, 3)
	switch {
	case err == nil:
		if class, level, err := IOPriority(pid); err != nil || class != IOClassRT || level != 3 {
			t.Errorf("after setting realtime/3 IOPriority = %v/%d, %v", class, level, err)
		}
	case IsPermission(err):
		if CanRaisePriority() {
			t.Logf("realtime I/O refused despite CAP_SYS_NICE (old kernel wants CAP_SYS_ADMIN): %v", err)
		}
	default:
		t.Errorf("SetIOPriority(realtime/3) = %v", err)
	}

	for _, bad := range []IOPrio{{IOClassBestEffort, 8}, {IOClassIdle, 1}, {IOClass(7), 0}} {
		if err := SetIOPriority(pid, bad.Class, bad.Level); !IsInvalid(err) {
			t.Errorf("SetIOPriority(%v) = %v, want invalid", bad, err)
		}
	}
}

func TestDeadProcess(t *testing.T) {
	pid := deadPID(t)
	check := func(what string, err error) {
		t.Helper()
		if !IsNoSuchProcess(err) {
			t.Errorf("%s on dead pid: %v, want no such process", what, err)
			return
		}
		if IsPermission(err) || IsInvalid(err) {
			t.Errorf("%s: %v classified as more than no such process", what, err)
		}
		if !strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)) {
			t.Errorf("%s: error %q does not name the pid", what, err)
		}
	}
	check("SetNice", SetNice(pid, 5))
	_, err := Nice(pid)
	check("Nice", err)
	check("SetAffinity", SetAffinity(pid, CPUSet{0}))
	_, err = Affinity(pid)
	check("Affinity", err)
	check("SetIOPriority", SetIOPriority(pid, IOClassIdle, 0))
	check("SetSessionNice", SetSessionNice(pid, 5))
	_, err = SessionNice(pid)
	check("SessionNice", err)
	_, _, err = IOPriority(pid)
	check("IOPriority", err)
}
