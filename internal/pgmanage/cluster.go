package pgmanage

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// Cluster is a running, supervised PostgreSQL server started by Start.
type Cluster struct {
	opts      Options
	logger    *slog.Logger
	layout    layout
	binDir    string
	acct      account
	socketDir string
	settings  map[string]string
	logFile   *os.File // the server's stderr, shared by all its incarnations

	// life is cancelled by Stop; the supervisor then shuts the server down.
	life    context.Context
	endLife context.CancelFunc
	// hurry is closed by Stop when its context expires: skip the rest of
	// the fast-shutdown grace period.
	hurry chan struct{}
	// done is closed when the supervisor has exited and no server runs.
	done chan struct{}
	// shutdownErr is written by the supervisor before it closes done.
	shutdownErr error

	mu       sync.Mutex
	current  *child
	restarts int

	stopMu  sync.Mutex
	stopped bool
	stopErr error
}

// ConnString is a pgx/libpq keyword/value connection string for the
// "tierdb" database, through the private Unix socket.
func (c *Cluster) ConnString() string { return c.connString("tierdb") }

// AdminConnString is like ConnString but for the "postgres" database, for
// creating or dropping databases.
func (c *Cluster) AdminConnString() string { return c.connString("postgres") }

func (c *Cluster) connString(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable",
		quoteConnValue(c.socketDir), c.opts.port(), db)
}

// quoteConnValue quotes a keyword/value connection string value if needed.
func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// SocketDir is the directory holding the server's Unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// DataDir is the cluster directory (PGDATA), Options.DataDir/pg.
func (c *Cluster) DataDir() string { return c.layout.pgDir }

// LogPath is the file the server's log is appended to.
func (c *Cluster) LogPath() string { return c.layout.logPath }

// BinDir is the directory of the PostgreSQL binaries in use.
func (c *Cluster) BinDir() string { return c.binDir }

// OSUser is the account the server processes run as.
func (c *Cluster) OSUser() OSUser { return c.acct.OSUser }

// PID is the postmaster's process ID, or 0 while no server runs (stopped,
// or between an unexpected exit and its restart).
func (c *Cluster) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil || c.current.hasExited() {
		return 0
	}
	return c.current.pid
}

// Restarts is how many times the supervisor restarted the server after it
// exited unexpectedly.
func (c *Cluster) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}
