package osprio

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startSleeper starts a throw-away child process to change the scheduling
// of, and kills it when the test ends.
func startSleeper(t *testing.T) int {
	t.Helper()
	return startSleep(t, nil)
}

// startSessionLeader is startSleeper for a child that leads a session of
// its own, as each PostgreSQL backend does.
func startSessionLeader(t *testing.T) int {
	t.Helper()
	return startSleep(t, &syscall.SysProcAttr{Setsid: true})
}

func startSleep(t *testing.T, attr *syscall.SysProcAttr) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// deadPID returns the PID of a child that has exited and been reaped. The
// PID could in principle be reused before the test uses it; with the kernel
// handing out PIDs in increasing order that needs a full wrap-around.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("running true: %v", err)
	}
	return cmd.Process.Pid
}

// procStatNice reads the nice value from /proc/<pid>/stat (field 19), an
// independent source from getpriority(2).
func procStatNice(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Field 2 (the command) is parenthesised and may contain spaces, so count
	// from the last ')': the next field is number 3.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	fields := strings.Fields(rest)
	n, err := strconv.Atoi(fields[19-3])
	if err != nil {
		t.Fatalf("parsing nice from /proc/%d/stat: %v", pid, err)
	}
	return n
}

// procStatus returns one field of /proc/<pid>/status.
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return ""
}
