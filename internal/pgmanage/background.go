package pgmanage

import (
	"errors"
	"strings"
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

// BackgroundPIDs lists the postmaster's child processes that are not client
// backends: checkpointer, background writer, walwriter, autovacuum launcher
// and workers, logical replication launcher and the like. It recognizes
// them by the process title PostgreSQL sets; unknown titles (e.g. extension
// background workers) are not included.
func (c *Cluster) BackgroundPIDs() ([]int, error) {
	postmaster := c.PID()
	if postmaster == 0 {
		return nil, errors.New("pgmanage: PostgreSQL is not running")
	}
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var found []int
	for _, pid := range pids {
		st, err := readProcStat(pid)
		if err != nil || st.ppid != postmaster {
			continue // gone meanwhile, or not the postmaster's
		}
		title, err := procTitle(pid)
		if err == nil && isBackgroundTitle(title, c.settings["cluster_name"]) {
			found = append(found, pid)
		}
	}
	return found, nil
}

func isBackgroundTitle(title, clusterName string) bool {
	rest, ok := strings.CutPrefix(title, "postgres: ")
	if !ok {
		return false
	}
	if clusterName != "" {
		rest = strings.TrimPrefix(rest, clusterName+": ")
	}
	for _, t := range backgroundTitles() {
		// Some titles carry details, e.g. "walsender postgres [local] idle"
		// or "logical replication worker for subscription 16394".
		if rest == t || strings.HasPrefix(rest, t+" ") {
			return true
		}
	}
	return false
}
