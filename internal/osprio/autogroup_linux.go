package osprio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// autogroupEnabled is where Linux says whether autogroups are on.
const autogroupEnabled = "/proc/sys/kernel/sched_autogroup_enabled"

// SetGroupNice gives the autogroup of process pid the nice level nice, if
// pid leads a session of its own, as every PostgreSQL backend does (each
// calls setsid). With the kernel's autogroups on (CONFIG_SCHED_AUTOGROUP,
// the default in Debian) each session is a scheduling group: the CPU is
// shared between the groups by the groups' nice levels, and a process's
// own nice level only ranks it within its group. It reports false,
// changing nothing, when autogroups are off or pid shares its session (the
// group's level would then move other processes too).
func SetGroupNice(pid, nice int) (bool, error) {
	if err := checkPID(pid); err != nil {
		return false, err
	}
	if err := checkNice(nice); err != nil {
		return false, err
	}
	if on, err := os.ReadFile(autogroupEnabled); err != nil || strings.TrimSpace(string(on)) != "1" {
		return false, nil
	}
	if sid, err := session(pid); err != nil || sid != pid {
		return false, err
	}
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/autogroup", os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(nice))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return false, &Error{Op: fmt.Sprintf("set autogroup nice to %d", nice), PID: pid, Err: errno(err)}
	}
	return true, nil
}

// GroupNice returns the nice level of the autogroup of process pid.
func GroupNice(pid int) (int, error) {
	if err := checkPID(pid); err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup")
	if err != nil {
		return 0, &Error{Op: "get autogroup nice", PID: pid, Err: errno(err)}
	}
	f := strings.Fields(string(b)) // "/autogroup-123 nice 5"
	if len(f) != 3 || f[1] != "nice" {
		return 0, fmt.Errorf("osprio: unexpected /proc/%d/autogroup: %q", pid, b)
	}
	return strconv.Atoi(f[2])
}

// session reads the session id of process pid from /proc/PID/stat (field 6).
func session(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, &Error{Op: "read session", PID: pid, Err: errno(err)}
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("osprio: unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, fmt.Errorf("osprio: unexpected /proc/%d/stat", pid)
	}
	return strconv.Atoi(f[3])
}

// errno turns a vanished /proc entry into ESRCH, as the system calls
// report a process that is gone, and keeps other errnos.
func errno(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return syscall.ESRCH
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
