package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tierdb/internal/pgmanage"
)

const (
	startTimeout  = 60 * time.Second
	pgStopTimeout = 40 * time.Second
)

// PostgresOptions configure StartPostgres.
type PostgresOptions struct {
	MaxConnections int
	Settings       map[string]string // postgresql.conf settings
	Logger         *slog.Logger      // pgmanage's supervision messages
	// CPUs, when set, pins the postmaster, its processes and so every
	// backend it forks later.
	CPUs []int
	// Replicas, when > 0, starts a primary with that many hot standbys
	// (pgmanage.StartSet), each its own postmaster.
	Replicas int
}

// Postgres is a private PostgreSQL server.
type Postgres struct {
	// Dir is a fresh directory under /tmp holding the data directory; the
	// caller may keep its own files there. Stop removes it.
	Dir string
	// Cluster is the primary.
	Cluster *pgmanage.Cluster
	// Set holds the primary and the standbys when started with replicas.
	Set *pgmanage.Set
	// Pinned is how many processes were moved to CPUs, the postmaster
	// included; 0 when not pinned.
	Pinned int
}

// StartPostgres starts PostgreSQL in a fresh directory under /tmp. On error
// it stops whatever it started.
func StartPostgres(ctx context.Context, o PostgresOptions) (p *Postgres, err error) {
	dir, err := os.MkdirTemp("/tmp", "tierdb-bench-")
	if err != nil {
		return nil, err
	}
	p = &Postgres{Dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Stop())
			p = nil
		}
	}()
	// When root, PostgreSQL runs as an unprivileged user that must be able
	// to pass through to its data directory; listing stays private.
	if err := os.Chmod(dir, 0o711); err != nil {
		return p, err
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	po := pgmanage.Options{
		DataDir:        filepath.Join(dir, "data"),
		MaxConnections: o.MaxConnections,
		Settings:       o.Settings,
		Logger:         o.Logger,
	}
	if o.Replicas > 0 {
		p.Set, err = pgmanage.StartSet(sctx, po, o.Replicas)
		if err == nil {
			p.Cluster = p.Set.Primary()
		}
	} else {
		p.Cluster, err = pgmanage.Start(sctx, po)
	}
	if err != nil {
		return p, fmt.Errorf("starting PostgreSQL: %w", err)
	}
	if len(o.CPUs) > 0 {
		// Before anything connects: backends are forked by the postmaster
		// and inherit its affinity.
		pids, err := p.NodePIDs()
		if err != nil {
			return p, err
		}
		for _, pid := range pids {
			n, err := PinTree(pid, o.CPUs)
			if err != nil {
				return p, fmt.Errorf("pinning PostgreSQL: %w", err)
			}
			p.Pinned += n
		}
	}
	return p, nil
}

// StandbyConnStrings are the standbys' connection strings (keyword/value,
// no commas), for tierdb's --standby-urls; nil without replicas.
func (p *Postgres) StandbyConnStrings() []string {
	if p.Set == nil {
		return nil
	}
	var out []string
	for _, n := range p.Set.Nodes() {
		if !n.Primary && n.ConnString != "" {
			out = append(out, n.ConnString)
		}
	}
	return out
}

// NodePIDs are the postmasters' process IDs, the primary's first. A
// standby's comes from its postmaster.pid (pgmanage gives the primary's
// only).
func (p *Postgres) NodePIDs() ([]int, error) {
	if p.Cluster == nil {
		return nil, errors.New("PostgreSQL is not running")
	}
	pids := []int{p.Cluster.PID()}
	if p.Set == nil {
		return pids, nil
	}
	for _, n := range p.Set.Nodes() {
		if n.Primary {
			continue
		}
		path := filepath.Join(p.Dir, "data", n.Name, "pg", "postmaster.pid")
		b, err := os.ReadFile(path)
		if err != nil {
			return pids, fmt.Errorf("standby %s: %w", n.Name, err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || pid <= 0 {
			return pids, fmt.Errorf("standby %s: %s does not start with a PID", n.Name, path)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Stop stops PostgreSQL and removes Dir. Safe on a partly started server.
func (p *Postgres) Stop() error {
	var errs []error
	if p.Set != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
		defer cancel()
		if err := p.Set.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping PostgreSQL: %w", err))
		}
	} else if p.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
		defer cancel()
		if err := p.Cluster.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping PostgreSQL: %w", err))
		}
	}
	errs = append(errs, os.RemoveAll(p.Dir))
	return errors.Join(errs...)
}
