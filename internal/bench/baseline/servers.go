package baseline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"

	"tierdb/internal/bench/rig"
)

// servers are the PostgreSQL cluster and the tierdb process under test.
type servers struct {
	pg     *rig.Postgres
	tierdb *rig.Tierdb
	layout string // the CPU layout, for the report
}

// startServers starts PostgreSQL, then tierdb (bin) on top of it, and pins both to
// serverCPU when pin is set; PostgreSQL's supervision warnings go to log.
// On error it stops whatever it started.
func startServers(ctx context.Context, bin string, cfg config, log *slog.Logger) (s *servers, err error) {
	var cpus []int
	if cfg.pin {
		cpus = []int{serverCPU}
	}
	s = &servers{}
	s.pg, err = rig.StartPostgres(ctx, rig.PostgresOptions{
		MaxConnections: 100,
		Logger:         log,
		CPUs:           cpus,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.stop())
			s = nil
		}
	}()
	s.layout = "unpinned: load generator, tierdb and PostgreSQL share all CPUs"
	if cfg.pin {
		s.layout = fmt.Sprintf("load generator on CPU %d (GOMAXPROCS=%d); tierdb and PostgreSQL (postmaster and its %d processes, and every backend forked later) on CPU %d",
			loadCPU, runtime.GOMAXPROCS(0), s.pg.Pinned-1, serverCPU)
	}
	s.tierdb, err = rig.StartTierdb(ctx, rig.TierdbOptions{
		Bin:         bin,
		PostgresURL: s.pg.Cluster.ConnString(),
		Args:        cfg.tierdbArgs,
		CPUs:        cpus,
		// In the directory the PostgreSQL data lives in, so it goes with it.
		LogPath: filepath.Join(s.pg.Dir, "tierdb.log"),
	})
	return s, err
}

// stop stops tierdb, then PostgreSQL, then removes the temporary directory.
// Safe to call on a partly started set.
func (s *servers) stop() error {
	var errs []error
	if s.tierdb != nil {
		errs = append(errs, s.tierdb.Stop())
	}
	return errors.Join(append(errs, s.pg.Stop())...)
}
