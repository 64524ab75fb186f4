package pgtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"tierdb/internal/pgmanage"
)

// startTimeout bounds a test server's start, including initdb.
const startTimeout = 2 * time.Minute

// Start starts a server in a new temporary directory and registers a
// cleanup that stops it and deletes the directory. It fails tb, never skips,
// when the server cannot be started.
func Start(tb testing.TB) *pgmanage.Cluster {
	tb.Helper()
	c, dir, err := start(nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := stop(c, dir); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// Main is for TestMain: it starts one server, calls setup with its
// connection string (database "tierdb", superuser "postgres"), runs the
// package's tests, stops and deletes the server and exits with the tests'
// status. It exits with status 1 when the server cannot be started.
func Main(m *testing.M, setup func(connString string)) {
	os.Exit(run(m, setup))
}

func run(m *testing.M, setup func(connString string)) int {
	c, dir, err := start(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer func() {
		if err := stop(c, dir); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}()
	setup(c.ConnString())
	return m.Run()
}

// start creates the data directory itself rather than using tb.TempDir:
// that one lives in a 0700 directory which the unprivileged PostgreSQL user
// (when tests run as root) cannot enter.
func start(logger *slog.Logger) (*pgmanage.Cluster, string, error) {
	if logger == nil {
		// Supervision messages would only clutter test output; failures
		// surface as errors.
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := os.MkdirTemp("", "tierdb-pgtest-")
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := pgmanage.Start(ctx, pgmanage.Options{
		DataDir: dir,
		Logger:  logger,
		// Small: many test packages may each run a server at once.
		MaxConnections: 50,
		SharedBuffers:  "32MB",
		Settings: map[string]string{
			// Throwaway data: losing the last commits in an OS crash is
			// fine, and tests run much faster without waiting for fsync.
			"fsync":              "off",
			"synchronous_commit": "off",
			"full_page_writes":   "off",
		},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return c, dir, nil
}

func stop(c *pgmanage.Cluster, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.Stop(ctx)
	if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}
