package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tierdb/internal/pgmanage"
)

// servers are the PostgreSQL cluster and the tierdb process under test.
type servers struct {
	dir        string // private temporary directory, removed by stop
	cluster    *pgmanage.Cluster
	tierdb     *exec.Cmd
	tierdbDone chan struct{} // closed once the tierdb process has been reaped
	tierdbLog  string
	addr       string // where tierdb accepts MongoDB clients
	layout     string // the CPU layout, for the report
}

const (
	startTimeout    = 60 * time.Second
	tierdbStopGrace = 15 * time.Second
	pgStopTimeout   = 40 * time.Second
)

// startServers starts PostgreSQL, then tierdb on top of it, and pins both to
// serverCPU when pin is set. On error it stops whatever it started.
func startServers(ctx context.Context, cfg config) (s *servers, err error) {
	bin, err := filepath.Abs(cfg.tierdbBin)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("tierdb binary: %w (run `make build`, or pass --tierdb)", err)
	}
	dir, err := os.MkdirTemp("/tmp", "tierdb-bench-")
	if err != nil {
		return nil, err
	}
	s = &servers{dir: dir, tierdbLog: filepath.Join(dir, "tierdb.log")}
	// When root, PostgreSQL runs as an unprivileged user that must be able
	// to pass through to its data directory; listing stays private.
	if err := os.Chmod(dir, 0o711); err != nil {
		return s, err
	}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()

	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	s.cluster, err = pgmanage.Start(sctx, pgmanage.Options{
		DataDir:        filepath.Join(dir, "data"),
		MaxConnections: 100,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return s, fmt.Errorf("starting PostgreSQL: %w", err)
	}
	s.layout = "unpinned: load generator, tierdb and PostgreSQL share all CPUs"
	if cfg.pin {
		// Before tierdb or the benchmark connect: backends are forked by the
		// postmaster and inherit its affinity.
		n, err := pinTree(s.cluster.PID(), serverCPU)
		if err != nil {
			return s, fmt.Errorf("pinning PostgreSQL: %w", err)
		}
		s.layout = fmt.Sprintf("load generator on CPU %d (GOMAXPROCS=%d); tierdb and PostgreSQL (postmaster and its %d processes, and every backend forked later) on CPU %d",
			loadCPU, runtime.GOMAXPROCS(0), n-1, serverCPU)
	}

	port, err := freePort()
	if err != nil {
		return s, err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	argv := append([]string{bin, "serve", "--postgres-url", s.cluster.ConnString(), "--listen", s.addr}, cfg.tierdbArgs...)
	if cfg.pin {
		argv = taskset(serverCPU, argv)
	}
	if err := s.startTierdb(argv); err != nil {
		return s, err
	}
	if err := s.waitTierdb(sctx); err != nil {
		return s, err
	}
	if cfg.pin {
		if got, err := cpuList(s.tierdb.Process.Pid); err != nil || got != strconv.Itoa(serverCPU) {
			return s, fmt.Errorf("tierdb runs on CPUs %q, not %d (%v)", got, serverCPU, err)
		}
	}
	return s, nil
}

// startTierdb runs argv with its output in tierdbLog. Like pgmanage, it
// forks from a goroutine that keeps its OS thread until the child is gone,
// because Pdeathsig fires when the forking thread exits: tierdb then dies
// with the benchmark even if the benchmark is killed outright.
func (s *servers) startTierdb(argv []string) error {
	logf, err := os.Create(s.tierdbLog)
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	s.tierdbDone = make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		defer logf.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = logf, logf
		// Own process group: a terminal's Ctrl-C reaches only the
		// benchmark, which then stops tierdb before PostgreSQL.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting tierdb: %w", err)
			close(s.tierdbDone)
			return
		}
		s.tierdb = cmd
		started <- nil
		_ = cmd.Wait()
		close(s.tierdbDone)
	}()
	return <-started
}

// waitTierdb waits until tierdb accepts connections.
func (s *servers) waitTierdb(ctx context.Context) error {
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-s.tierdbDone:
			return fmt.Errorf("tierdb exited before accepting connections; its log:\n%s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("tierdb did not accept connections on %s: %w; its log:\n%s", s.addr, ctx.Err(), s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *servers) logTail() string {
	b, _ := os.ReadFile(s.tierdbLog)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// tierdbExited reports whether tierdb has died; a benchmark of a dead server
// measures nothing.
func (s *servers) tierdbExited() bool {
	select {
	case <-s.tierdbDone:
		return true
	default:
		return false
	}
}

// stop stops tierdb (SIGTERM, then SIGKILL), then PostgreSQL, then removes
// the temporary directory. Safe to call on a partly started set.
func (s *servers) stop() error {
	var errs []error
	if s.tierdb != nil {
		_ = s.tierdb.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.tierdbDone:
		case <-time.After(tierdbStopGrace):
			errs = append(errs, errors.New("tierdb ignored SIGTERM; killed it"))
			_ = s.tierdb.Process.Kill()
			<-s.tierdbDone
		}
	}
	if s.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
		defer cancel()
		if err := s.cluster.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping PostgreSQL: %w", err))
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// freePort asks the kernel for a free TCP port on the loopback interface.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
