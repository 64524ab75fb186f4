// Package procfs reads the few fields of Linux's /proc that tierdb and its
// benchmark need: from /proc/<pid>/stat which PostgreSQL processes are
// alive, whose children they are and their CPU time; from /proc/stat each
// CPU's busy and idle time; from /proc/<pid>/schedstat how long a
// process waited for a CPU; a process's children.
//
// It only reads; it never signals or changes a process.
package procfs
