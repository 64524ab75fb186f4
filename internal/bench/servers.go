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
	quotas []*cpuQuota // one per node
	// group holds PostgreSQL and every tierdb of the runs with
	// --server-cgroup (joinServerGroup); nil without.
	group *cpuQuota
}

// startPostgres starts PostgreSQL, pins it (and so every backend it forks
// later) to the server CPUs in the split layout, and applies the CPU quota
// or moves it into the server group (--server-cgroup).
// On error it stops whatever it started.
func startPostgres(ctx context.Context, settings map[string]string, replicas int, layout Layout, log *slog.Logger) (*pgServer, error) {
	// WAL fsync timing feeds the diagnostics; the scenario may override.
	all := map[string]string{"track_wal_io_timing": "on"}
	maps.Copy(all, settings)
	o := rig.PostgresOptions{MaxConnections: 200, Settings: all, Logger: log, Replicas: replicas}
	if layout.Mode == LayoutSplit {
		o.CPUs = layout.ServerCPUs
	}
	pg, err := rig.StartPostgres(ctx, o)
	if err != nil {
		return nil, err
	}
	p := &pgServer{Postgres: pg}
	if layout.ServerCgroup {
		if p.group, err = newCPUGroup(cgroupV1CPU, fmt.Sprintf("tierdb-bench-%d-server", os.Getpid())); err != nil {
			return nil, errors.Join(fmt.Errorf("--server-cgroup: %w", err), p.stop())
		}
		nodes, err := pg.NodePIDs()
		for _, pm := range nodes {
			if err == nil {
				err = moveTree(p.group, pm)
			}
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--server-cgroup: %w", err), p.stop())
		}
	}
	if layout.PGCPUQuota > 0 {
		nodes, err := pg.NodePIDs()
		if err == nil {
			p.quotas, err = applyNodeQuotas(cgroupV1CPU, fmt.Sprintf("tierdb-bench-%d-pg", os.Getpid()), nodes, layout.PGCPUQuota)
		}
		if err != nil {
			return nil, errors.Join(err, p.stop())
		}
	}
	return p, nil
}

// applyNodeQuotas gives every PostgreSQL node (postmaster PID) its own
// cgroup under root capped at cpus CPUs, as equal-capacity machines would
// be, and moves the node's processes into it; backends forked later are
// born in it. A single node's group is called name, node i's name-node<i>.
// On error it removes the groups it made, once empty.
func applyNodeQuotas(root, name string, postmasters []int, cpus float64) (quotas []*cpuQuota, err error) {
	defer func() {
		if err != nil {
			for _, q := range quotas {
				_ = q.remove()
			}
			quotas = nil
		}
	}()
	for i, pm := range postmasters {
		group := name
		if len(postmasters) > 1 {
			group = fmt.Sprintf("%s-node%d", name, i)
		}
		period := int64(cfsPeriod)
		if len(postmasters) > 1 {
			period = nodeCFSPeriod
		}
		q, err := newCPUQuotaPeriod(root, group, cpus, period)
		if err != nil {
			return quotas, err
		}
		quotas = append(quotas, q)
		if err := moveTree(q, pm); err != nil {
			return quotas, fmt.Errorf("--pg-cpu-quota: %w", err)
		}
	}
	return quotas, nil
}

// moveTree moves a process and every process below it into q; processes
// they fork later are born in it.
func moveTree(q *cpuQuota, root int) error {
	tree, _ := rig.ProcessTree(root)
	pids := []int{root}
	for _, proc := range tree {
		if proc.PID != root {
			pids = append(pids, proc.PID)
		}
	}
	if err := q.add(pids...); err != nil {
		return err
	}
	if q.kernel {
		if in, err := q.contains(root); err != nil || !in {
			return fmt.Errorf("process %d is not in cgroup %s after moving it (%v)", root, q.dir, err)
		}
	}
	return nil
}

// joinServerGroup moves a tierdb the harness started into the server
// group, if there is one.
func (p *pgServer) joinServerGroup(pid int) error {
	if p.group == nil {
		return nil
	}
	if err := moveTree(p.group, pid); err != nil {
		return fmt.Errorf("--server-cgroup: %w", err)
	}
	return nil
}

// postgresCPU is the CPU seconds of every PostgreSQL process of every node.
func (p *pgServer) postgresCPU() float64 {
	pids, _ := p.NodePIDs()
	var sum float64
	for _, pid := range pids {
		sum += treeCPU(pid)
	}
	return sum
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
	for _, q := range append(p.quotas, p.group) {
		if q == nil {
			continue
		}
		err = errors.Join(err, q.remove())
	}
	return err
}
