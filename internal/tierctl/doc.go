// Package tierctl applies each tier's OS treatment to the PostgreSQL
// processes that serve it: the nice level and I/O priority of every backend in
// a tier's pool, the CPU pool it may run on (switched while high-tier
// requests are in process), and a low I/O priority for PostgreSQL's
// background processes.
//
// It turns a qos.Config into osprio calls and nothing more: it must never
// decide when a request runs (that is qos), never touch a process it was not
// told is a backend or background process of our PostgreSQL, and never fail
// a request because the OS refused a change (it logs once and carries on).
package tierctl
