// Package procfs reads the few fields of Linux's /proc/<pid>/stat that
// tierdb (which PostgreSQL processes are alive, whose children they are)
// and its benchmark (CPU time per process) need.
//
// It only reads; it never signals or changes a process.
package procfs
