// Package pgmanage runs tierdb's embedded PostgreSQL cluster.
//
// By default tierdb owns a private PostgreSQL cluster inside its data
// directory. This package creates that cluster on first start (initdb),
// reuses it afterwards, runs the postmaster as a supervised child process,
// restarts it when it dies unexpectedly and shuts it down cleanly. The rest
// of tierdb only sees a connection string (Cluster.ConnString).
//
// Layout under Options.DataDir:
//
//	pg/                 the cluster (PGDATA), 0700, owned by the PostgreSQL OS user
//	postgres.log        the server's stderr, appended across runs
//	postgres.socketdir  where the current socket directory is, so that the
//	                    first start after a crash can remove the old one
//	node<i>/            with StartSet: standby i, the same layout inside
//	replset.json        with StartSet: which node is the primary
//
// StartSet runs a primary with hot standbys: each standby is created from a
// base backup taken through its own replication slot and streams the
// primary's WAL; Set.Failover promotes one (after it has replayed all the
// primary wrote) and rewinds the old primary into a standby of it.
//
// The server listens on a Unix socket in a short private directory created
// under the temp dir at each start (socket paths are limited to ~107 bytes,
// data directories are often longer) and, only if Options.Port > 0, on
// 127.0.0.1. Authentication is "trust": the socket directory is 0700 and owned
// by the PostgreSQL user, so only that user and root can reach it.
//
// PostgreSQL refuses to run as root. When tierdb runs as root the server runs
// as an unprivileged OS user instead (Options.OSUser, else "postgres", else a
// system user "tierdb" that is created on demand).
//
// Server settings are passed as -c flags on every start rather than written
// into postgresql.conf or postgresql.auto.conf, so a newer tierdb can change
// them for an existing cluster.
//
// Leftover servers: if a postmaster from an earlier run still owns the
// cluster directory (tierdb was killed without its child noticing), Start
// stops it with a fast shutdown (SIGINT, escalating to SIGQUIT) before
// starting its own, and terminates orphaned backends of a dead postmaster.
//
// This package must never create schemas, tables or connection pools, and
// never touch data inside the cluster beyond creating the "tierdb" database
// and replication slots:
// that is the storage layer's job. It must never delete a cluster directory
// or any file in it (apart from a postmaster.pid whose PID now belongs to an
// unrelated process), and never signal a process it has not identified as a
// PostgreSQL server process working in this cluster's directory.
package pgmanage
