// Package osprio changes how the Linux kernel schedules a process, given its
// PID: nice level (CPU weight), its session's nice level (the weight of the
// session's autogroup, which is what ranks the process where the kernel
// groups tasks by session), time slice (how soon it preempts when it
// wakes), CPU affinity (which CPUs it may run on) and I/O priority class
// and level. tierdb uses it on the PostgreSQL backend processes that serve
// each performance tier.
//
// It is the thin, testable OS layer and nothing more. It must never decide
// policy (which tier gets which nice value, CPU set or I/O class is the
// caller's business), and it must never touch a process it was not handed:
// every call names its target PID explicitly, and PID 0 ("the caller") and
// negative PIDs (process groups) are rejected rather than passed to the kernel.
// A session's level is changed only through a process that leads the
// session, never through a member of someone else's (the terminal's, say).
//
// These settings are per thread on Linux; passing a PID targets the
// process's main thread only. That is exactly right for PostgreSQL
// backends, which are single-threaded, and is why the package has no
// notion of threads (tierctl names tierdb's own threads by their IDs when
// it gives them a slice).
//
// The Applier remembers what it last applied to each PID so callers may
// re-apply on every change without paying a system call when nothing changed.
// Because PIDs are reused, callers must Forget a PID once its process exits.
package osprio
