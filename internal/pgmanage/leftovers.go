package pgmanage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// orphanGrace is how long orphaned backends get to exit after SIGQUIT
// before they are killed; they only need to notice and exit.
const orphanGrace = 5 * time.Second

// clearLeftovers makes sure no server process from an earlier run still
// works in pgDir, so that the postmaster about to start is not refused.
//
// A live postmaster (tierdb was killed and its child survived) is stopped
// with a fast shutdown rather than adopted: tierdb must own its child to
// supervise it, and a fast shutdown is clean (no crash recovery needed).
// Backends whose postmaster died (kill -9) keep the shared memory segment
// attached, which makes a new postmaster refuse to start; they are sent
// SIGQUIT, as the postmaster itself would have done.
func clearLeftovers(ctx context.Context, pgDir string, stopTimeout time.Duration, logger *slog.Logger) error {
	dir, err := filepath.EvalSymlinks(pgDir)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	lockFile := filepath.Join(pgDir, "postmaster.pid")
	if pid := lockFilePID(lockFile); pid > 0 && alive(pid) {
		in, known := isPostgresIn(pid, dir)
		switch {
		case in:
			logger.Warn("a PostgreSQL server from an earlier tierdb run still owns the cluster; stopping it with a fast shutdown",
				"pid", pid, "dir", pgDir)
			if err := stopLeftoverPostmaster(ctx, pid, stopTimeout, logger); err != nil {
				return err
			}
		case known:
			// The PID now belongs to an unrelated process; postgres would
			// take it for a live postmaster and refuse to start.
			logger.Warn("removing stale postmaster.pid: its PID belongs to an unrelated process", "pid", pid, "file", lockFile)
			if err := os.Remove(lockFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("pgmanage: %w", err)
			}
		}
	}
	orphans, err := postgresProcsIn(dir)
	if err != nil || len(orphans) == 0 {
		return err
	}
	logger.Warn("stopping orphaned PostgreSQL processes of a dead postmaster", "pids", orphans, "dir", pgDir)
	signalAll(orphans, syscall.SIGQUIT)
	if waitGone(ctx.Done(), orphans, orphanGrace) {
		return nil
	}
	signalAll(orphans, syscall.SIGKILL)
	if waitGone(ctx.Done(), orphans, orphanGrace) {
		return nil
	}
	return fmt.Errorf("pgmanage: PostgreSQL processes %v still run in %s; stop them by hand", orphans, pgDir)
}

func stopLeftoverPostmaster(ctx context.Context, pid int, stopTimeout time.Duration, logger *slog.Logger) error {
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pgmanage: stopping leftover PostgreSQL server (pid %d): %w", pid, err)
	}
	if waitGone(ctx.Done(), []int{pid}, stopTimeout) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("pgmanage: waiting for leftover PostgreSQL server (pid %d) to stop: %w", pid, ctx.Err())
	}
	logger.Warn("leftover PostgreSQL server ignored fast shutdown; sending immediate shutdown", "pid", pid)
	syscall.Kill(pid, syscall.SIGQUIT)
	if waitGone(ctx.Done(), []int{pid}, orphanGrace) {
		return nil
	}
	return fmt.Errorf("pgmanage: leftover PostgreSQL server (pid %d) does not stop; stop it by hand", pid)
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		// ESRCH: already gone, which is the goal.
		_ = syscall.Kill(pid, sig)
	}
}

// lockFilePID reads the postmaster PID from the first line of
// postmaster.pid; 0 when there is none.
func lockFilePID(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
