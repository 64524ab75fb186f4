package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/osprio"
	"tierdb/internal/pgmanage"
)

const (
	serverStartTimeout = 60 * time.Second
	tierdbStopGrace    = 15 * time.Second
	pgStopTimeout      = 40 * time.Second
)

// pgServer is the one PostgreSQL all runs share.
type pgServer struct {
	dir     string // private temporary directory, removed by stop
	cluster *pgmanage.Cluster
	quota   *cpuQuota
}

// startPostgres starts PostgreSQL in a fresh directory under /tmp, pins it
// (and so every backend it forks later) to cpus and applies the CPU quota.
// On error it stops whatever it started.
func startPostgres(ctx context.Context, settings map[string]string, layout Layout, log *slog.Logger) (p *pgServer, err error) {
	dir, err := os.MkdirTemp("/tmp", "tierdb-bench-")
	if err != nil {
		return nil, err
	}
	p = &pgServer{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.stop())
		}
	}()
	// When root, PostgreSQL runs as an unprivileged user that must be able
	// to pass through to its data directory; listing stays private.
	if err := os.Chmod(dir, 0o711); err != nil {
		return p, err
	}
	sctx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	// WAL fsync timing feeds the diagnostics; the scenario may override.
	all := map[string]string{"track_wal_io_timing": "on"}
	maps.Copy(all, settings)
	p.cluster, err = pgmanage.Start(sctx, pgmanage.Options{
		DataDir:        filepath.Join(dir, "data"),
		MaxConnections: 200,
		Settings:       all,
		Logger:         log,
	})
	if err != nil {
		return p, fmt.Errorf("starting PostgreSQL: %w", err)
	}
	if layout.Mode == LayoutSplit {
		if _, err := pinTree(p.cluster.PID(), layout.ServerCPUs); err != nil {
			return p, fmt.Errorf("pinning PostgreSQL: %w", err)
		}
	}
	if layout.PGCPUQuota > 0 {
		p.quota, err = newCPUQuota(cgroupV1CPU, fmt.Sprintf("tierdb-bench-%d-pg", os.Getpid()), layout.PGCPUQuota)
		if err != nil {
			return p, err
		}
		tree, _ := processTree(p.cluster.PID())
		if err := p.quota.add(tree...); err != nil {
			return p, err
		}
		if in, err := p.quota.contains(p.cluster.PID()); err != nil || !in {
			return p, fmt.Errorf("--pg-cpu-quota: the postmaster is not in cgroup %s after moving it (%v)", p.quota.dir, err)
		}
	}
	return p, nil
}

// exec runs one SQL statement on the bench's database.
func (p *pgServer) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, p.cluster.ConnString())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func (p *pgServer) version(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, p.cluster.ConnString())
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

// stop stops PostgreSQL, removes the cgroup and the temporary directory.
// Safe on a partly started server.
func (p *pgServer) stop() error {
	var errs []error
	if p.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
		defer cancel()
		if err := p.cluster.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping PostgreSQL: %w", err))
		}
	}
	if p.quota != nil {
		errs = append(errs, p.quota.remove())
	}
	errs = append(errs, os.RemoveAll(p.dir))
	return errors.Join(errs...)
}

// tierdbProc is one tierdb server process.
type tierdbProc struct {
	cmd         *exec.Cmd
	done        chan struct{} // closed once the process has been reaped
	addr        string
	metricsAddr string
	logPath     string
}

// startTierdb runs `bin serve` on PostgreSQL pgURL with extra args and
// environment variables, on
// cpus (nil: anywhere), logging to logPath, and waits until it accepts
// connections.
func startTierdb(ctx context.Context, bin, pgURL string, args, env []string, cpus []int, logPath string) (*tierdbProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	t := &tierdbProc{
		addr:        net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(mport)),
		logPath:     logPath,
		done:        make(chan struct{}),
	}
	argv := append([]string{"serve", "--postgres-url", pgURL, "--listen", t.addr, "--metrics-listen", t.metricsAddr}, args...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	go func() {
		// The child gets Pdeathsig, which Linux sends when the *thread*
		// that forked it exits, so this goroutine keeps its thread until
		// the child is gone (never unlocked: the thread ends with it).
		runtime.LockOSThread()
		defer close(t.done)
		defer logf.Close()
		cmd := exec.Command(bin, argv...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		// Own process group: a terminal's Ctrl-C reaches only the harness,
		// which then stops tierdb before PostgreSQL.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := withThreadAffinity(cpus, cmd.Start); err != nil {
			started <- fmt.Errorf("starting tierdb: %w", err)
			return
		}
		t.cmd = cmd
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	if err := t.waitReady(ctx); err != nil {
		return t, errors.Join(err, t.stop())
	}
	if len(cpus) > 0 {
		got, err := osprio.Affinity(t.cmd.Process.Pid)
		if err != nil || !osprio.CPUSet(got).Equal(cpus) {
			return t, errors.Join(fmt.Errorf("tierdb runs on CPUs %s, not %s (%v)", osprio.CPUSet(got), osprio.CPUSet(cpus), err), t.stop())
		}
	}
	return t, nil
}

func (t *tierdbProc) pid() int { return t.cmd.Process.Pid }

func (t *tierdbProc) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", t.addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-t.done:
			return fmt.Errorf("tierdb exited before accepting connections; its log:\n%s", t.logTail())
		case <-ctx.Done():
			return fmt.Errorf("tierdb did not accept connections on %s: %w; its log:\n%s", t.addr, ctx.Err(), t.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (t *tierdbProc) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *tierdbProc) logTail() string {
	b, _ := os.ReadFile(t.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// stop sends SIGTERM, then SIGKILL after a grace period.
func (t *tierdbProc) stop() error {
	if t.cmd == nil {
		return nil
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
		return nil
	case <-time.After(tierdbStopGrace):
		_ = t.cmd.Process.Kill()
		<-t.done
		return errors.New("tierdb ignored SIGTERM; killed it")
	}
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
