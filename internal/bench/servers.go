package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/bench/rig"
)

// pgServer is the one PostgreSQL all runs share.
type pgServer struct {
	*rig.Postgres
	quota *cpuQuota
}

// startPostgres starts PostgreSQL, pins it (and so every backend it forks
// later) to the server CPUs in the split layout and applies the CPU quota.
// On error it stops whatever it started.
func startPostgres(ctx context.Context, settings map[string]string, layout Layout, log *slog.Logger) (*pgServer, error) {
	// WAL fsync timing feeds the diagnostics; the scenario may override.
	all := map[string]string{"track_wal_io_timing": "on"}
	maps.Copy(all, settings)
	o := rig.PostgresOptions{MaxConnections: 200, Settings: all, Logger: log}
	if layout.Mode == LayoutSplit {
		o.CPUs = layout.ServerCPUs
	}
	pg, err := rig.StartPostgres(ctx, o)
	if err != nil {
		return nil, err
	}
	p := &pgServer{Postgres: pg}
	if layout.PGCPUQuota > 0 {
		if err := p.applyQuota(layout.PGCPUQuota); err != nil {
			return nil, errors.Join(err, p.stop())
		}
	}
	return p, nil
}

// applyQuota moves every PostgreSQL process into a fresh cgroup capped at
// cpus CPUs; backends forked later are born in it.
func (p *pgServer) applyQuota(cpus float64) (err error) {
	p.quota, err = newCPUQuota(cgroupV1CPU, fmt.Sprintf("tierdb-bench-%d-pg", os.Getpid()), cpus)
	if err != nil {
		return err
	}
	tree, _ := rig.ProcessTree(p.Cluster.PID())
	pids := make([]int, len(tree))
	for i, proc := range tree {
		pids[i] = proc.PID
	}
	if err := p.quota.add(pids...); err != nil {
		return err
	}
	if in, err := p.quota.contains(p.Cluster.PID()); err != nil || !in {
		return fmt.Errorf("--pg-cpu-quota: the postmaster is not in cgroup %s after moving it (%v)", p.quota.dir, err)
	}
	return nil
}

// exec runs one SQL statement on the bench's database.
func (p *pgServer) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, p.Cluster.ConnString())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func (p *pgServer) version(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, p.Cluster.ConnString())
	if err != nil {
		return "unknown"
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}

// stop stops PostgreSQL, then removes the cgroup, which the kernel refuses
// while processes remain in it, and the temporary directory.
func (p *pgServer) stop() error {
	err := p.Postgres.Stop()
	if p.quota != nil {
		err = errors.Join(err, p.quota.remove())
	}
	return err
}
