package pgmanage

import (
	"errors"
	"log/slog"
	"path/filepath"
	"time"
)

// Options configure Start. Only DataDir is required.
type Options struct {
	// DataDir is tierdb's data directory. The cluster lives in DataDir/pg and
	// the server log in DataDir/postgres.log. Created (0700) if missing.
	DataDir string

	// BinDir is a directory holding postgres, initdb and pg_ctl
	// (--postgres-bin). Empty means FindBinaries searches for them.
	BinDir string

	// OSUser is the unprivileged account PostgreSQL runs as when tierdb runs
	// as root. Ignored when tierdb is not root (the server then runs as the
	// current user). Empty means: the owner of an existing cluster, else
	// "postgres" if that user exists, else a system user "tierdb" (created).
	OSUser string

	// Port, when > 0, makes the server also listen on 127.0.0.1:Port.
	// Authentication is "trust", so every local user can then connect as the
	// superuser: only use it on single-user machines or for debugging.
	// When 0 the server only listens on its private Unix socket.
	Port int

	// MaxConnections is max_connections; default 200.
	MaxConnections int

	// SharedBuffers is shared_buffers in PostgreSQL syntax; default "128MB".
	SharedBuffers string

	// Settings are extra server settings (name → value), passed as -c flags
	// after, and therefore overriding, the package's own settings.
	Settings map[string]string

	// Logger receives supervision events; default slog.Default().
	Logger *slog.Logger

	// Standby, when set, makes this cluster a hot standby of another one:
	// created on first start as a base backup of the primary, and always
	// started in recovery, streaming the primary's WAL.
	Standby *StandbyOptions

	// ClusterName is cluster_name, which appears in the servers' process
	// titles; default "tierdb".
	ClusterName string

	// StopTimeout is how long Stop waits for a fast shutdown before it falls
	// back to an immediate one; default 30s. Also used for a leftover
	// postmaster from an earlier run.
	StopTimeout time.Duration
}

// StandbyOptions say where a standby streams from.
type StandbyOptions struct {
	// PrimaryConnString reaches the primary as a superuser, for the base
	// backup and as primary_conninfo (keyword/value form, see
	// Cluster.ReplicationConnString).
	PrimaryConnString string
	// SlotName is the physical replication slot on the primary that keeps
	// the WAL this standby still needs; it must exist before Start.
	SlotName string
}

const (
	defaultMaxConnections = 200
	defaultSharedBuffers  = "128MB"
	defaultStopTimeout    = 30 * time.Second
	// defaultStartTimeout bounds Start when its context has no deadline.
	defaultStartTimeout = 60 * time.Second
	// socketPort names the socket file (.s.PGSQL.5432) when Port is 0.
	socketPort = 5432
)

// normalized returns a copy of o with defaults filled in and DataDir made
// absolute (the server runs with a different working directory).
func (o Options) normalized() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("pgmanage: Options.DataDir is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, err
	}
	o.DataDir = abs
	if o.Port < 0 || o.Port > 65535 {
		return o, errors.New("pgmanage: Options.Port must be between 0 and 65535")
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = defaultMaxConnections
	}
	if o.SharedBuffers == "" {
		o.SharedBuffers = defaultSharedBuffers
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ClusterName == "" {
		o.ClusterName = defaultClusterName
	}
	if o.Standby != nil && (o.Standby.PrimaryConnString == "" || o.Standby.SlotName == "") {
		return o, errors.New("pgmanage: Options.Standby needs PrimaryConnString and SlotName")
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = defaultStopTimeout
	}
	return o, nil
}

// port is the server's port: the TCP port when listening on TCP, otherwise
// only the number in the socket file's name.
func (o Options) port() int {
	if o.Port > 0 {
		return o.Port
	}
	return socketPort
}
