// Package tierctl applies each tier's OS treatment to the PostgreSQL
// processes that serve it: the nice level (and, where the kernel groups tasks
// by session, the level of the backend's own session) and I/O priority of
// every backend in a tier's pool, the lower tiers' levels only while the high
// tier is active, the CPU pool it may run on (switched with that), a low
// I/O priority for PostgreSQL's background processes, and the high tier's
// time slice, short while other programs keep the server's CPUs busy (it
// reads /proc to tell; hostload.go).
//
// It turns a qos.Config into osprio calls and nothing more: it must never
// decide when a request runs (that is qos), never change a process it was not
// told is a backend or background process of our PostgreSQL (other programs'
// it only reads about), and never fail
// a request because the OS refused a change (it logs once and carries on).
package tierctl
