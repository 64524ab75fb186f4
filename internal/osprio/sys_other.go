//go:build !linux

package osprio

import (
	"errors"
	"fmt"
	"time"
)

// Outside Linux every call fails, so that tierdb still builds (for
// development) and callers treat OS scheduling as unavailable.

func unsupported(what string) error {
	return fmt.Errorf("osprio: %s: %w", what, errors.ErrUnsupported)
}

// SetNice is only implemented on Linux.
func SetNice(pid int, nice int) error { return unsupported("set nice") }

// Nice is only implemented on Linux.
func Nice(pid int) (int, error) { return 0, unsupported("get nice") }

// SetNiceAndSlice is only implemented on Linux.
func SetNiceAndSlice(pid, nice int, slice time.Duration) error {
	return unsupported("set nice and slice")
}

// Slice is only implemented on Linux.
func Slice(pid int) (time.Duration, error) { return 0, unsupported("get slice") }

// SlicesSupported is false outside Linux.
func SlicesSupported() bool { return false }

// SetSessionNice is only implemented on Linux.
func SetSessionNice(pid, nice int) error { return unsupported("set session nice") }

// SessionNice is only implemented on Linux.
func SessionNice(pid int) (int, error) { return 0, unsupported("get session nice") }

// SessionNiceUnlimited is false outside Linux.
func SessionNiceUnlimited() bool { return false }

// AutogroupsEnabled is false outside Linux.
func AutogroupsEnabled() bool { return false }

// SetAffinity is only implemented on Linux.
func SetAffinity(pid int, set CPUSet) error { return unsupported("set CPU affinity") }

// Affinity is only implemented on Linux.
func Affinity(pid int) (CPUSet, error) { return nil, unsupported("get CPU affinity") }

// OnlineCPUs is only implemented on Linux.
func OnlineCPUs() (CPUSet, error) { return nil, unsupported("list online CPUs") }

// SetIOPriority is only implemented on Linux.
func SetIOPriority(pid int, class IOClass, level int) error {
	return unsupported("set I/O priority")
}

// IOPriority is only implemented on Linux.
func IOPriority(pid int) (IOClass, int, error) { return 0, 0, unsupported("get I/O priority") }

// CanRaisePriority is always false outside Linux.
func CanRaisePriority() bool { return false }
