package osprio

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nobody is the unprivileged user the helper runs as.
const nobody = 65534

const helperEnv = "OSPRIO_UNPRIVILEGED_HELPER"

// TestUnprivileged re-runs this test binary as user nobody, where the kernel
// enforces the limits root is exempt from, and checks that they surface as
// permission errors.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The go tool's build directory is private to root; nobody needs a copy
	// it can reach.
	dir, err := os.MkdirTemp("", "osprio-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "osprio.test")
	if err := copyFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "-test.run=^TestUnprivilegedHelper$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged helper failed: %v\n%s", err, out)
	}
	// A helper that skipped would also exit 0.
	if !strings.Contains(string(out), "--- PASS: TestUnprivilegedHelper") {
		t.Fatalf("unprivileged helper did not run its checks:\n%s", out)
	}
}

// TestUnprivilegedHelper does the checks inside the unprivileged process;
// run directly it does nothing.
func TestUnprivilegedHelper(t *testing.T) {
	rootPID, err := strconv.Atoi(os.Getenv(helperEnv))
	if err != nil {
		t.Skip("only runs as TestUnprivileged's child")
	}
	if os.Geteuid() == 0 {
		t.Fatal("helper is still root")
	}
	// RLIMIT_NICE could have been inherited above 20; make sure it is 0.
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NICE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = 0
	if err := unix.Setrlimit(unix.RLIMIT_NICE, &rl); err != nil {
		t.Fatal(err)
	}
	if CanRaisePriority() {
		t.Error("CanRaisePriority is true for nobody with RLIMIT_NICE 0")
	}

	pid := startSleeper(t)
	if err := SetNice(pid, 5); err != nil {
		t.Errorf("raising nice of own child: %v", err)
	}
	if err := SetNice(pid, -5); !IsPermission(err) {
		t.Errorf("SetNice(own child, -5) = %v, want permission error", err)
	}
	if err := SetNice(pid, 0); !IsPermission(err) {
		t.Errorf("lowering nice from 5 to 0 = %v, want permission error", err)
	}
	if err := SetIOPriority(pid, IOClassRT, 0); !IsPermission(err) {
		t.Errorf("realtime I/O as nobody = %v, want permission error", err)
	}
	if SessionNiceUnlimited() {
		t.Error("SessionNiceUnlimited is true for nobody")
	}
	if AutogroupsEnabled() {
		leader := startSessionLeader(t)
		if err := SetSessionNice(leader, -5); !IsPermission(err) {
			t.Errorf("SetSessionNice(own child, -5) = %v, want permission error", err)
		}
		// One change in 100 ms, machine-wide (any process's counts), is
		// all the kernel allows an unprivileged process.
		var err error
		for range 20 {
			time.Sleep(150 * time.Millisecond)
			if err = SetSessionNice(leader, 5); !errors.Is(err, syscall.EAGAIN) {
				break
			}
		}
		if err != nil {
			t.Errorf("raising the session nice of own child: %v", err)
		}
		if got, _ := SessionNice(leader); got != 5 {
			t.Errorf("session nice %d, want 5", got)
		}
		start := time.Now()
		err = SetSessionNice(leader, 6)
		if time.Since(start) < 50*time.Millisecond && !errors.Is(err, syscall.EAGAIN) {
			t.Errorf("a second change within 100 ms = %v, want EAGAIN", err)
		}
	}
	// Another user's process: the root test process that started us.
	if err := SetNice(rootPID, 19); !IsPermission(err) {
		t.Errorf("SetNice(root's pid) = %v, want permission error", err)
	}
	if got := procStatNice(t, rootPID); got == 19 {
		t.Error("nobody changed root's nice value")
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}
