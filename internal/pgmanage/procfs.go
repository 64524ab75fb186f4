package pgmanage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tierdb/internal/procfs"
)

// listPIDs returns the PIDs of all processes visible in /proc.
func listPIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("pgmanage: %w", err)
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// alive reports whether pid is a running (not zombie) process. Zombies
// count as gone: they hold no memory or files, and when tierdb is PID 1 in a
// container nobody may ever reap them.
func alive(pid int) bool {
	st, err := procfs.ReadStat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// procTitle is the process title PostgreSQL writes over its argv, e.g.
// "postgres: tierdb: checkpointer".
func procTitle(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b)), nil
}

// isPostgresIn reports whether pid is a PostgreSQL server process whose
// working directory (a server's is always its data directory) is dir.
// known is false when that could not be determined (e.g. no permission).
func isPostgresIn(pid int, dir string) (in, known bool) {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false, false
	}
	// A binary replaced by a package upgrade reads "/…/postgres (deleted)".
	name := strings.TrimSuffix(filepath.Base(exe), " (deleted)")
	return cwd == dir && (name == "postgres" || name == "postmaster"), true
}

// postgresProcsIn lists the PostgreSQL server processes working in dir.
func postgresProcsIn(dir string) ([]int, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var found []int
	for _, pid := range pids {
		if pid == self {
			continue
		}
		if in, _ := isPostgresIn(pid, dir); in && alive(pid) {
			found = append(found, pid)
		}
	}
	return found, nil
}

// waitGone polls until none of pids is alive, d passes or done closes, and
// reports whether they all went away. Polling because these processes are
// not tierdb's children, so there is nothing to wait(2) on.
func waitGone(done <-chan struct{}, pids []int, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		anyAlive := false
		for _, pid := range pids {
			if alive(pid) {
				anyAlive = true
				break
			}
		}
		if !anyAlive {
			return true
		}
		select {
		case <-tick.C:
		case <-timer.C:
			return false
		case <-done:
			return false
		}
	}
}
