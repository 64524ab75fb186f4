package osprio

import (
	"errors"
	"fmt"
	"syscall"
)

// Error reports a system call that failed for one process. Err is the errno
// the kernel returned, so errors.Is(err, syscall.ESRCH) and friends work;
// IsNoSuchProcess and IsPermission are the usual questions.
type Error struct {
	Op  string // what was attempted, e.g. "set nice to -5"
	PID int
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("osprio: %s for pid %d: %v", e.Op, e.PID, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsNoSuchProcess reports whether err means the target process no longer
// exists (ESRCH), which for a PostgreSQL backend usually just means the
// connection ended.
func IsNoSuchProcess(err error) bool {
	return errors.Is(err, syscall.ESRCH)
}

// IsPermission reports whether err means the caller lacks the privilege for
// the change. The kernel answers EPERM for "not your process" and EACCES for
// "you may not lower the nice value this far"; both are a permission problem.
func IsPermission(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// invalidError is an argument rejected before any system call was made.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return "osprio: " + e.msg }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is an argument the package refused before
// reaching the kernel (nice out of range, empty CPU set, bad I/O level, ...).
// Such errors are configuration mistakes, not runtime conditions.
func IsInvalid(err error) bool {
	var ie *invalidError
	return errors.As(err, &ie)
}

// checkPID refuses the PIDs the kernel would read as "myself" (0) or as a
// process group (negative): this package only touches processes it is given.
func checkPID(pid int) error {
	if pid <= 0 {
		return invalidf("pid %d is not a process id (must be > 0)", pid)
	}
	return nil
}
