package rig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tierdb/internal/osprio"
)

const tierdbStopGrace = 15 * time.Second

// TierdbOptions configure StartTierdb.
type TierdbOptions struct {
	Bin         string // the tierdb executable
	PostgresURL string // --postgres-url
	// Args follow serve's own flags (--postgres-url, --listen and, with
	// Metrics, --metrics-listen).
	Args []string
	// Env is added to this process's environment.
	Env []string
	// CPUs, when set, is where the process runs from its first
	// instruction on; nil: anywhere.
	CPUs    []int
	LogPath string // receives its stdout and stderr
	// Metrics also gives it a free port for its metrics endpoint.
	Metrics bool
}

// Tierdb is one tierdb server process.
type Tierdb struct {
	cmd         *exec.Cmd
	done        chan struct{} // closed once the process has been reaped
	addr        string
	metricsAddr string
	logPath     string
}

// StartTierdb runs `tierdb serve` on free loopback ports and waits until it
// accepts connections. On error it stops the process.
func StartTierdb(ctx context.Context, o TierdbOptions) (*Tierdb, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	t := &Tierdb{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		logPath: o.LogPath,
		done:    make(chan struct{}),
	}
	argv := []string{"serve", "--postgres-url", o.PostgresURL, "--listen", t.addr}
	if o.Metrics {
		mport, err := FreePort()
		if err != nil {
			return nil, err
		}
		t.metricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(mport))
		argv = append(argv, "--metrics-listen", t.metricsAddr)
	}
	argv = append(argv, o.Args...)
	if err := t.start(o.Bin, argv, o.Env, o.CPUs); err != nil {
		return nil, err
	}
	if err := t.WaitReady(ctx); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	if len(o.CPUs) > 0 {
		got, err := osprio.Affinity(t.PID())
		if err != nil || !osprio.CPUSet(got).Equal(o.CPUs) {
			return nil, errors.Join(fmt.Errorf("tierdb runs on CPUs %s, not %s (%v)", osprio.CPUSet(got), osprio.CPUSet(o.CPUs), err), t.Stop())
		}
	}
	return t, nil
}

func (t *Tierdb) start(bin string, argv, env []string, cpus []int) error {
	logf, err := os.Create(t.logPath)
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	go func() {
		// The child gets Pdeathsig, which Linux sends when the *thread*
		// that forked it exits, so this goroutine keeps its thread until
		// the child is gone (never unlocked: the thread ends with it).
		// tierdb then dies with the benchmark even if that is killed
		// outright.
		runtime.LockOSThread()
		defer close(t.done)
		defer logf.Close()
		cmd := exec.Command(bin, argv...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		// Own process group: a terminal's Ctrl-C reaches only the
		// benchmark, which then stops tierdb before PostgreSQL.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := withThreadAffinity(cpus, cmd.Start); err != nil {
			started <- fmt.Errorf("starting tierdb: %w", err)
			return
		}
		t.cmd = cmd
		started <- nil
		_ = cmd.Wait()
	}()
	return <-started
}

// Addr is where it accepts MongoDB clients.
func (t *Tierdb) Addr() string { return t.addr }

// MetricsAddr is its metrics endpoint; "" without TierdbOptions.Metrics.
func (t *Tierdb) MetricsAddr() string { return t.metricsAddr }

// PID is its process ID.
func (t *Tierdb) PID() int { return t.cmd.Process.Pid }

// WaitReady waits until it accepts connections, at most a minute.
func (t *Tierdb) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", t.addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-t.done:
			return fmt.Errorf("tierdb exited before accepting connections; its log:\n%s", t.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("tierdb did not accept connections on %s: %w; its log:\n%s", t.addr, ctx.Err(), t.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Exited reports whether the process has died; a benchmark of a dead
// server measures nothing.
func (t *Tierdb) Exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// LogTail is the last 20 lines of its log.
func (t *Tierdb) LogTail() string {
	b, _ := os.ReadFile(t.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// Stop sends SIGTERM, then SIGKILL after a grace period, and waits for the
// process to end.
func (t *Tierdb) Stop() error {
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

// FreePort asks the kernel for a free TCP port on the loopback interface.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
