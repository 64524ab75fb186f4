package osprio

import (
	"sync"
	"sync/atomic"
	"time"
)

// Settings is what the Applier should make true for one process. A nil field
// means "leave as it is"; a non-nil empty CPUs is an error, not "leave". A
// Slice needs a Nice: the system call that sets one sets both. Session is
// the nice level of the process's session (SetSessionNice): the one that
// ranks it where the kernel groups tasks by session.
type Settings struct {
	Nice    *int
	Slice   *time.Duration
	Session *int
	CPUs    CPUSet
	IO      *IOPrio
}

// applied is what the Applier last set successfully on one PID. Fields whose
// has-flag (or nil CPUs) says unknown are always re-applied.
type applied struct {
	nice     int
	hasNice  bool
	slice    time.Duration
	hasSlice bool
	session  int
	hasSess  bool
	cpus     CPUSet // normalized; nil when unknown
	io       IOPrio
	hasIO    bool
}

// Applier applies Settings to processes and remembers what it applied, so
// that callers can hand it the desired state on every change and only real
// changes cost a system call. It is safe for concurrent use.
//
// It trusts its memory: if something else changes a process behind its back,
// or a PID is reused by a new process, it will not notice. Callers must
// Forget a PID when its process exits.
type Applier struct {
	// mu is held across the system calls themselves: two concurrent Applies
	// to one PID must reach the kernel in the same order they update the
	// memory, or the memory would describe the loser. The calls take
	// microseconds, so one lock for all PIDs is not a bottleneck.
	mu       sync.Mutex
	pids     map[int]*applied
	syscalls atomic.Int64
}

// NewApplier returns an Applier that remembers nothing yet.
func NewApplier() *Applier {
	return &Applier{pids: make(map[int]*applied)}
}

// Apply makes s true for process pid, skipping each setting already applied
// to pid by this Applier. It attempts every setting even when one fails and
// returns the first error, except that once the process is found to be gone
// (IsNoSuchProcess) it stops and forgets pid. A failed setting is forgotten,
// so the next Apply retries it.
func (a *Applier) Apply(pid int, s Settings) error {
	if err := checkPID(pid); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()

	st := a.pids[pid]
	if st == nil {
		st = &applied{}
	}
	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}

	switch {
	case s.Slice != nil && s.Nice == nil:
		fail(invalidf("a slice needs a nice value: one system call sets both"))
	case s.Slice != nil && !(st.hasNice && st.nice == *s.Nice && st.hasSlice && st.slice == *s.Slice):
		st.hasNice, st.hasSlice = false, false
		nice, slice := *s.Nice, *s.Slice
		invalid := checkNice(nice)
		if invalid == nil {
			invalid = checkSlice(slice)
		}
		if err := a.call(func() error { return SetNiceAndSlice(pid, nice, slice) }, invalid); err != nil {
			fail(err)
		} else {
			st.nice, st.hasNice, st.slice, st.hasSlice = nice, true, slice, true
		}
	case s.Slice == nil && s.Nice != nil && !(st.hasNice && st.nice == *s.Nice):
		st.hasNice = false
		if err := a.call(func() error { return SetNice(pid, *s.Nice) }, checkNice(*s.Nice)); err != nil {
			fail(err)
		} else {
			st.nice, st.hasNice = *s.Nice, true
		}
	}
	if s.Session != nil && !IsNoSuchProcess(first) && !(st.hasSess && st.session == *s.Session) {
		st.hasSess = false
		nice := *s.Session
		if err := a.call(func() error { return SetSessionNice(pid, nice) }, checkNice(nice)); err != nil {
			fail(err)
		} else {
			st.session, st.hasSess = nice, true
		}
	}
	if s.CPUs != nil && !IsNoSuchProcess(first) {
		want := s.CPUs.normalize()
		if st.cpus == nil || !st.cpus.Equal(want) {
			st.cpus = nil
			if err := a.call(func() error { return SetAffinity(pid, want) }, checkCPUs(want)); err != nil {
				fail(err)
			} else {
				st.cpus = want
			}
		}
	}
	if s.IO != nil && !IsNoSuchProcess(first) && !(st.hasIO && st.io == *s.IO) {
		st.hasIO = false
		io := *s.IO
		if err := a.call(func() error { return SetIOPriority(pid, io.Class, io.Level) }, checkIOPrio(io.Class, io.Level)); err != nil {
			fail(err)
		} else {
			st.io, st.hasIO = io, true
		}
	}

	switch {
	case IsNoSuchProcess(first):
		delete(a.pids, pid)
	case st.hasNice || st.hasSlice || st.hasSess || st.cpus != nil || st.hasIO:
		a.pids[pid] = st
	default:
		delete(a.pids, pid)
	}
	return first
}

// call runs one setter unless the arguments were already found invalid, and
// counts it only when it reached the kernel.
func (a *Applier) call(set func() error, invalid error) error {
	if invalid != nil {
		return invalid
	}
	a.syscalls.Add(1)
	return set()
}

// Forget drops what the Applier remembers about pid, so the next Apply to it
// makes every system call. Call it when the process exits, before its PID
// can be reused.
func (a *Applier) Forget(pid int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pids, pid)
}

// Syscalls returns how many system calls Apply has made, successful or not.
func (a *Applier) Syscalls() int64 {
	return a.syscalls.Load()
}
