package pgmanage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Start creates the cluster in opts.DataDir/pg if needed, starts the server,
// waits until it accepts connections, makes sure the "tierdb" database
// exists and supervises the server until Stop. When ctx has no deadline,
// Start gives up after 60s.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	logger := opts.Logger
	l := newLayout(opts.DataDir)
	binDir, acct, err := prepareCluster(ctx, opts, l)
	if err != nil {
		return nil, err
	}
	if opts.Port > 0 {
		logger.Warn("PostgreSQL listens on TCP with trust authentication: every local user can connect as superuser",
			"addr", fmt.Sprintf("127.0.0.1:%d", opts.Port))
	}
	if err := clearLeftovers(ctx, l.pgDir, opts.StopTimeout, logger); err != nil {
		return nil, err
	}
	socketDir, err := newSocketDir(l, acct, opts.port())
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(l.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		removeSocketDir(l, socketDir)
		return nil, fmt.Errorf("pgmanage: server log: %w", err)
	}
	life, endLife := context.WithCancel(context.Background())
	c := &Cluster{
		opts:      opts,
		logger:    logger,
		layout:    l,
		binDir:    binDir,
		acct:      acct,
		socketDir: socketDir,
		settings:  serverSettings(opts, socketDir),
		logFile:   logFile,
		life:      life,
		endLife:   endLife,
		hurry:     make(chan struct{}),
		done:      make(chan struct{}),
	}
	if err := c.startFirst(ctx); err != nil {
		endLife()
		logFile.Close()
		removeSocketDir(l, socketDir)
		return nil, err
	}
	return c, nil
}

// prepareCluster finds the binaries and the account to run them as, and
// creates the directories and, on first use, the cluster.
func prepareCluster(ctx context.Context, opts Options, l layout) (string, account, error) {
	binDir, err := FindBinaries(opts.BinDir)
	if err != nil {
		return "", account{}, err
	}
	acct, err := resolveAccount(ctx, opts, l.pgDir, opts.Logger)
	if err != nil {
		return "", account{}, err
	}
	if err := prepareDirs(l, acct, opts.Logger); err != nil {
		return "", account{}, err
	}
	binDir, err = binariesForCluster(ctx, binDir, opts.BinDir != "", l.pgDir, opts.Logger)
	if err != nil {
		return "", account{}, err
	}
	switch {
	case l.initialized():
	case opts.Standby != nil:
		opts.Logger.Info("creating PostgreSQL standby from a base backup of the primary", "dir", l.pgDir, "slot", opts.Standby.SlotName)
		if err := baseBackup(ctx, binDir, l.pgDir, acct, *opts.Standby); err != nil {
			return "", account{}, err
		}
	default:
		opts.Logger.Info("creating PostgreSQL cluster", "dir", l.pgDir, "bin", binDir, "os_user", acct.Name)
		if err := initCluster(ctx, binDir, l.pgDir, acct); err != nil {
			return "", account{}, err
		}
	}
	if opts.Standby != nil {
		// A standby always starts in recovery, also after a former primary
		// was rewound to follow a new one.
		if err := writeStandbySignal(l.pgDir, acct); err != nil {
			return "", account{}, err
		}
	}
	return binDir, acct, nil
}

// startFirst starts the first server incarnation and hands it to the
// supervisor once it is usable; on failure no server is left running.
func (c *Cluster) startFirst(ctx context.Context) error {
	ch, err := c.spawn()
	if err != nil {
		return fmt.Errorf("pgmanage: starting postgres: %w", err)
	}
	err = c.waitReady(ctx, ch)
	if err == nil && c.opts.Standby == nil { // a standby has the primary's databases
		err = ensureDatabase(ctx, c.AdminConnString(), "tierdb")
	}
	if err != nil {
		c.shutdown(ch, true)
		return err
	}
	c.mu.Lock()
	c.current = ch
	c.mu.Unlock()
	go c.supervise(ch)
	return nil
}

// waitReady polls until the server accepts connections, it exits, or ctx
// ends.
func (c *Cluster) waitReady(ctx context.Context, ch *child) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ping(ctx, c.AdminConnString())
		if err == nil {
			return nil
		}
		select {
		case <-ch.exited:
			return fmt.Errorf("pgmanage: postgres exited during startup (%v); last lines of %s:\n%s",
				ch.err, c.layout.logPath, logTail(c.layout.logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("pgmanage: postgres did not accept connections in time: %w (last attempt: %v); last lines of %s:\n%s",
				ctx.Err(), err, c.layout.logPath, logTail(c.layout.logPath, 20))
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, connString string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// ensureDatabase creates database name unless it exists. Its encoding and
// C collation come from the template, i.e. from initdb's flags.
func ensureDatabase(ctx context.Context, adminConnString, name string) error {
	conn, err := pgx.Connect(ctx, adminConnString)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("pgmanage: looking up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgmanage: creating database %s: %w", name, err)
	}
	return nil
}
