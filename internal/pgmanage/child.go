package pgmanage

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// child is one incarnation of the postmaster.
type child struct {
	pid     int
	proc    *os.Process
	started time.Time
	exited  chan struct{} // closed after the process was reaped
	err     error         // exec.Cmd.Wait's result; read only after exited
}

func (ch *child) hasExited() bool {
	select {
	case <-ch.exited:
		return true
	default:
		return false
	}
}

// signal sends sig unless the process has already been reaped (os.Process
// then refuses, so a recycled PID is never hit).
func (ch *child) signal(sig os.Signal) {
	_ = ch.proc.Signal(sig)
}

// spawn starts a postmaster.
//
// The child gets Pdeathsig=SIGQUIT (immediate shutdown) so it does not
// outlive tierdb. Linux sends that signal when the *thread* that forked the
// child exits, and Go retires threads freely, so the fork happens on a
// goroutine locked to its thread, and that goroutine keeps the thread until
// the child has exited.
func (c *Cluster) spawn() (*child, error) {
	ch := &child{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Deliberately never unlocked: the thread ends with this goroutine,
		// after the child is gone.
		cmd := exec.Command(filepath.Join(c.binDir, "postgres"), serverArgs(c.layout.pgDir, c.settings)...)
		cmd.Dir = c.layout.pgDir
		cmd.Env = childEnv()
		cmd.Stdout = c.logFile
		cmd.Stderr = c.logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: c.acct.credential(),
			// Its own process group: a terminal's Ctrl-C reaches tierdb,
			// which then shuts the server down in order.
			Setpgid:   true,
			Pdeathsig: syscall.SIGQUIT,
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		ch.pid = cmd.Process.Pid
		ch.proc = cmd.Process
		ch.started = time.Now()
		started <- nil
		ch.err = cmd.Wait()
		close(ch.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return ch, nil
}
