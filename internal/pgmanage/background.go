package pgmanage

import (
	"errors"
	"strings"

	"tierdb/internal/procfs"
)

// backgroundTitles are the process titles (after "postgres: " and the
// cluster name) of the server's own helper processes, as opposed to backends
// serving a client connection. Parallel query workers are left out on
// purpose: they do a client's work.
func backgroundTitles() []string {
	return []string{
		"checkpointer",
		"background writer",
		"walwriter",
		"autovacuum launcher",
		"autovacuum worker",
		"logical replication launcher",
		"logical replication worker",
		"logical replication apply worker",
		"logical replication parallel apply worker",
		"logical replication tablesync worker",
		"archiver",
		"stats collector",
		"startup",
		"walreceiver",
		"walsender",
		"walsummarizer",
		"io worker",
		"slotsync worker",
	}
}

// BackgroundProcess is one of the server's own helper processes.
type BackgroundProcess struct {
	PID int
	// Title is what PostgreSQL calls it, e.g. "checkpointer", "walwriter",
	// "autovacuum worker" (the process title without "postgres: " and the
	// cluster name, and without details).
	Title string
}

// BackgroundProcesses lists the postmaster's child processes that are not
// client backends: checkpointer, background writer, walwriter, autovacuum
// launcher and workers, logical replication launcher and the like. It
// recognizes them by the process title PostgreSQL sets; unknown titles (e.g.
// extension background workers) are not included.
func (c *Cluster) BackgroundProcesses() ([]BackgroundProcess, error) {
	postmaster := c.PID()
	if postmaster == 0 {
		return nil, errors.New("pgmanage: PostgreSQL is not running")
	}
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var found []BackgroundProcess
	for _, pid := range pids {
		st, err := procfs.ReadStat(pid)
		if err != nil || st.PPID != postmaster {
			continue // gone meanwhile, or not the postmaster's
		}
		title, err := procTitle(pid)
		if err != nil {
			continue
		}
		if kind, ok := backgroundKind(title, c.settings["cluster_name"]); ok {
			found = append(found, BackgroundProcess{PID: pid, Title: kind})
		}
	}
	return found, nil
}

// BackgroundPIDs is BackgroundProcesses without the titles.
func (c *Cluster) BackgroundPIDs() ([]int, error) {
	procs, err := c.BackgroundProcesses()
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.PID
	}
	return pids, err
}

func isBackgroundTitle(title, clusterName string) bool {
	_, ok := backgroundKind(title, clusterName)
	return ok
}

// backgroundKind returns which helper process a title names.
func backgroundKind(title, clusterName string) (string, bool) {
	rest, ok := strings.CutPrefix(title, "postgres: ")
	if !ok {
		return "", false
	}
	if clusterName != "" {
		rest = strings.TrimPrefix(rest, clusterName+": ")
	}
	for _, t := range backgroundTitles() {
		// Some titles carry details, e.g. "walsender postgres [local] idle"
		// or "logical replication worker for subscription 16394".
		if rest == t || strings.HasPrefix(rest, t+" ") {
			return t, true
		}
	}
	return "", false
}
