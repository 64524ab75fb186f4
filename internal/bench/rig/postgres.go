package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
}

// Postgres is a private PostgreSQL server.
type Postgres struct {
	// Dir is a fresh directory under /tmp holding the data directory; the
	// caller may keep its own files there. Stop removes it.
	Dir     string
	Cluster *pgmanage.Cluster
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
	p.Cluster, err = pgmanage.Start(sctx, pgmanage.Options{
		DataDir:        filepath.Join(dir, "data"),
		MaxConnections: o.MaxConnections,
		Settings:       o.Settings,
		Logger:         o.Logger,
	})
	if err != nil {
		return p, fmt.Errorf("starting PostgreSQL: %w", err)
	}
	if len(o.CPUs) > 0 {
		// Before anything connects: backends are forked by the postmaster
		// and inherit its affinity.
		if p.Pinned, err = PinTree(p.Cluster.PID(), o.CPUs); err != nil {
			return p, fmt.Errorf("pinning PostgreSQL: %w", err)
		}
	}
	return p, nil
}

// Stop stops PostgreSQL and removes Dir. Safe on a partly started server.
func (p *Postgres) Stop() error {
	var errs []error
	if p.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
		defer cancel()
		if err := p.Cluster.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping PostgreSQL: %w", err))
		}
	}
	errs = append(errs, os.RemoveAll(p.Dir))
	return errors.Join(errs...)
}
