package osprio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SetNice sets the nice value of process pid (setpriority(2) with
// PRIO_PROCESS). Lowering a nice value below its current one, or below zero,
// needs privilege; see CanRaisePriority.
func SetNice(pid int, nice int) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	if err := checkNice(nice); err != nil {
		return err
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, nice); err != nil {
		return &Error{Op: fmt.Sprintf("set nice to %d", nice), PID: pid, Err: err}
	}
	return nil
}

// Nice returns the nice value of process pid.
func Nice(pid int) (int, error) {
	if err := checkPID(pid); err != nil {
		return 0, err
	}
	// The raw system call returns 20-nice (1..40) so that a successful result
	// is never negative and cannot be mistaken for an error.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
	if err != nil {
		return 0, &Error{Op: "get nice", PID: pid, Err: err}
	}
	return 20 - prio, nil
}

// SetNiceAndSlice sets the nice value and the time slice of process pid in
// one sched_setattr(2) call (policy SCHED_OTHER, which a PostgreSQL backend
// has). The slice is the EEVDF scheduler's custom slice (Linux 6.12 and
// later): a task that wakes with a shorter slice than the running task's
// preempts it at once, where a heavier weight (a lower nice value) alone
// waits until the running task's slice ends, up to the default slice of a
// few milliseconds. 0 restores the kernel's default slice. Kernels before
// 6.12 ignore the slice; Slice reads back what the kernel kept.
func SetNiceAndSlice(pid, nice int, slice time.Duration) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	if err := checkNice(nice); err != nil {
		return err
	}
	if err := checkSlice(slice); err != nil {
		return err
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: int32(nice), Runtime: uint64(slice)}
	if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
		return &Error{Op: fmt.Sprintf("set nice to %d and slice to %v", nice, slice), PID: pid, Err: err}
	}
	return nil
}

// Slice returns the time slice the kernel gives process pid: its custom
// slice, or the kernel's default (0 before Linux 6.12, which does not say).
func Slice(pid int) (time.Duration, error) {
	if err := checkPID(pid); err != nil {
		return 0, err
	}
	attr, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return 0, &Error{Op: "get slice", PID: pid, Err: err}
	}
	return time.Duration(attr.Runtime), nil
}

// SlicesSupported reports whether this kernel keeps custom slices (Linux
// 6.12 and later). It asks about the calling thread without changing it:
// such a kernel reports every task's slice, an older one none.
func SlicesSupported() bool {
	attr, err := unix.SchedGetAttr(unix.Gettid(), 0)
	return err == nil && attr.Runtime > 0
}

// SetSessionNice sets the nice level of the autogroup of process pid's
// session: the CPU weight the kernel gives the session as a whole against
// other sessions where it groups tasks by session (AutogroupsEnabled, and
// the process in the root cgroup). There a process's own nice level only
// ranks it within its session, so for a process alone in its session this
// is the level that counts. pid must lead its session, so that the
// autogroup is its own and not, say, that of the terminal tierdb runs in:
// every PostgreSQL backend does (each calls setsid). Lowering the level
// below its current value needs CAP_SYS_NICE, as for SetNice.
func SetSessionNice(pid, nice int) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	if err := checkNice(nice); err != nil {
		return err
	}
	sid, err := unix.Getsid(pid)
	if err != nil {
		return &Error{Op: "get session", PID: pid, Err: err}
	}
	if sid != pid {
		return invalidf("process %d does not lead its session (%d), whose autogroup is shared", pid, sid)
	}
	if err := os.WriteFile(autogroupPath(pid), []byte(strconv.Itoa(nice)), 0); err != nil {
		return &Error{Op: fmt.Sprintf("set session nice to %d", nice), PID: pid, Err: procErrno(err)}
	}
	return nil
}

// SessionNice returns the nice level of the autogroup of process pid's
// session. A process in the kernel's default group (a daemon in init's
// session, say) has no autogroup and so no session level: that is an
// invalid-argument error.
func SessionNice(pid int) (int, error) {
	if err := checkPID(pid); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(autogroupPath(pid))
	if err != nil {
		return 0, &Error{Op: "get session nice", PID: pid, Err: procErrno(err)}
	}
	// "/autogroup-123 nice 5", or nothing for the default group.
	if len(b) == 0 {
		return 0, invalidf("process %d is in the kernel's default group, not an autogroup", pid)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || f[1] != "nice" {
		return 0, &Error{Op: "get session nice", PID: pid, Err: fmt.Errorf("unexpected %q", b)}
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, &Error{Op: "get session nice", PID: pid, Err: err}
	}
	return n, nil
}

// AutogroupsEnabled reports whether the kernel groups tasks by session
// (CONFIG_SCHED_AUTOGROUP, on unless booted with noautogroup or turned off
// in /proc/sys/kernel/sched_autogroup_enabled). It does so only for tasks
// in the root cgroup; inside a cpu cgroup nice levels rank processes.
func AutogroupsEnabled() bool {
	b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

func autogroupPath(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/autogroup" }

// procErrno turns a failed /proc file operation into the errno the
// package's error tests know: a process that is gone has no /proc entry.
func procErrno(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return syscall.ESRCH
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SetAffinity restricts process pid to the CPUs in set (sched_setaffinity(2)).
// The set must be non-empty. The kernel silently drops CPUs that are offline
// and fails only if none is online, so check configured sets once with
// ValidateCPUs.
func SetAffinity(pid int, set CPUSet) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	if err := checkCPUs(set); err != nil {
		return err
	}
	mask := unix.NewCPUSet(maxOf(set) + 1)
	for _, id := range set {
		mask.Set(id)
	}
	if err := unix.SchedSetaffinityDynamic(pid, mask); err != nil {
		return &Error{Op: "set CPU affinity to " + set.String(), PID: pid, Err: err}
	}
	return nil
}

// Affinity returns the CPUs process pid may run on, sorted.
func Affinity(pid int) (CPUSet, error) {
	if err := checkPID(pid); err != nil {
		return nil, err
	}
	// The kernel refuses a buffer smaller than its own CPU mask with EINVAL,
	// and that size is not exported, so grow until it fits.
	for size := 1024; ; size *= 2 {
		mask := unix.NewCPUSet(size)
		err := unix.SchedGetaffinityDynamic(pid, mask)
		if err == unix.EINVAL && size <= maxCPUID {
			continue
		}
		if err != nil {
			return nil, &Error{Op: "get CPU affinity", PID: pid, Err: err}
		}
		set := CPUSet{}
		for id := range size {
			if mask.IsSet(id) {
				set = append(set, id)
			}
		}
		return set, nil
	}
}

func maxOf(set CPUSet) int {
	m := 0
	for _, id := range set {
		m = max(m, id)
	}
	return m
}

// onlineCPUsPath is where Linux lists the CPUs currently online.
const onlineCPUsPath = "/sys/devices/system/cpu/online"

// OnlineCPUs returns the CPUs currently online on this machine. Note that a
// container's cpuset may still forbid some of them.
func OnlineCPUs() (CPUSet, error) {
	b, err := os.ReadFile(onlineCPUsPath)
	if err != nil {
		return nil, fmt.Errorf("osprio: reading online CPUs: %w", err)
	}
	set, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("osprio: reading online CPUs from %s: %w", onlineCPUsPath, err)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("osprio: %s lists no CPUs", onlineCPUsPath)
	}
	return set, nil
}

// ioprioWhoProcess is IOPRIO_WHO_PROCESS: the "who" argument is one PID.
const ioprioWhoProcess = 1

// SetIOPriority sets the I/O scheduling class and level of process pid
// (ioprio_set(2)). Level is 0 (highest) to 7 for IOClassRT and
// IOClassBestEffort and must be 0 for IOClassNone and IOClassIdle.
// IOClassRT needs privilege. The class only has an effect with I/O schedulers
// that honour it (bfq; mq-deadline honours the class only).
func SetIOPriority(pid int, class IOClass, level int) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	if err := checkIOPrio(class, level); err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(pid), encodeIOPrio(class, level))
	if errno != 0 {
		op := "set I/O priority to " + IOPrio{Class: class, Level: level}.String()
		return &Error{Op: op, PID: pid, Err: errno}
	}
	return nil
}

// IOPriority returns the I/O scheduling class and level of process pid. A
// process that never had a class set reports IOClassNone; the level the
// kernel reports with it differs between kernel versions.
func IOPriority(pid int) (IOClass, int, error) {
	if err := checkPID(pid); err != nil {
		return 0, 0, err
	}
	v, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(pid), 0)
	if errno != 0 {
		return 0, 0, &Error{Op: "get I/O priority", PID: pid, Err: errno}
	}
	class, level := decodeIOPrio(v)
	return class, level, nil
}

// CanRaisePriority reports whether this process may set negative nice
// values: it has CAP_SYS_NICE (root normally does), or RLIMIT_NICE allows
// going below zero (as limits.conf "nice" entries arrange). Without
// CAP_SYS_NICE the kernel also only lets it change processes of its own user.
// Callers use it to warn once and run without negative nice values rather
// than fail every request.
func CanRaisePriority() bool {
	if hasCapability(unix.CAP_SYS_NICE) {
		return true
	}
	// RLIMIT_NICE holds 20-minimum nice, so anything above 20 reaches below 0.
	var rl unix.Rlimit
	return unix.Getrlimit(unix.RLIMIT_NICE, &rl) == nil && rl.Cur > 20
}

// SessionNiceUnlimited reports whether this process may change session nice
// levels as often as it likes: without CAP_SYS_ADMIN the kernel allows one
// change in 100 ms, machine-wide, and answers the others EAGAIN.
func SessionNiceUnlimited() bool { return hasCapability(unix.CAP_SYS_ADMIN) }

// hasCapability reports whether capability c is in this process's
// effective set (for root, should capget fail, whether euid is 0).
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 fills two 32-bit words
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return unix.Geteuid() == 0
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}
