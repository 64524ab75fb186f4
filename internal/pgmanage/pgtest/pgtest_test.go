package pgtest_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/pgmanage"
	"tierdb/internal/pgmanage/pgtest"
)

// connString is the package-wide server's, set by TestMain. Tests only read it.
var connString string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(cs string) { connString = cs })
}

func query(t *testing.T, cs string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMainProvidesServer(t *testing.T) {
	if connString == "" {
		t.Fatal("Main did not call setup")
	}
	if db := query(t, connString); db != "tierdb" {
		t.Errorf("current_database() = %q, want tierdb", db)
	}
}

func TestStartAndCleanup(t *testing.T) {
	var c *pgmanage.Cluster
	var pid int
	t.Run("use", func(t *testing.T) {
		c = pgtest.Start(t)
		pid = c.PID()
		if db := query(t, c.ConnString()); db != "tierdb" {
			t.Errorf("current_database() = %q, want tierdb", db)
		}
		if c.ConnString() == connString {
			t.Error("Start shares Main's server")
		}
	})
	if c == nil {
		t.FailNow()
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still running after the test (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(c.DataDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s left behind: %v", c.DataDir(), err)
	}
}
