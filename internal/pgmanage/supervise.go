package pgmanage

import (
	"fmt"
	"syscall"
	"time"
)

const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 10 * time.Second
	// stableRun is how long a server must have run for its next crash to
	// be restarted without the backoff accumulated by earlier ones.
	stableRun = time.Minute
	// quitGrace is how long an immediate shutdown (SIGQUIT) may take
	// before the postmaster is killed.
	quitGrace = 5 * time.Second
)

// supervise watches the running server, restarts it when it exits on its
// own, and shuts it down when Stop ends the cluster's life.
func (c *Cluster) supervise(ch *child) {
	defer close(c.done)
	backoff := minBackoff
	ready := true // the first server was ready before it was handed over
	for {
		select {
		case <-c.life.Done():
			c.shutdownErr = c.shutdown(ch, false)
			return
		case <-ch.exited:
		}
		// A server that came up and accepted connections before it died
		// is a new failure, not a crash loop: restart it at once again.
		if ready || time.Since(ch.started) >= stableRun {
			backoff = minBackoff
		}
		c.logger.Error("PostgreSQL exited unexpectedly; restarting it",
			"pid", ch.pid, "status", fmt.Sprint(ch.err), "restart_in", backoff,
			"log", c.layout.logPath, "log_tail", logTail(c.layout.logPath, 5))
		next, ok := c.restart(&backoff)
		if !ok {
			return
		}
		ch = next
		// Until it accepts connections (or exits, or Stop), this server
		// counts as part of a crash loop.
		ready = c.waitReady(c.life, ch) == nil
	}
}

// restart starts a new server, retrying with growing backoff, until it
// succeeds (true) or Stop is called (false).
func (c *Cluster) restart(backoff *time.Duration) (*child, bool) {
	for {
		timer := time.NewTimer(*backoff)
		select {
		case <-c.life.Done():
			timer.Stop()
			return nil, false
		case <-timer.C:
		}
		*backoff = min(*backoff*2, maxBackoff)
		if err := clearLeftovers(c.life, c.layout.pgDir, c.opts.StopTimeout, c.logger); err != nil {
			c.logger.Error("cannot restart PostgreSQL", "err", err, "retry_in", *backoff)
			continue
		}
		ch, err := c.spawn()
		if err != nil {
			c.logger.Error("cannot restart PostgreSQL", "err", err, "retry_in", *backoff)
			continue
		}
		c.mu.Lock()
		c.current = ch
		c.restarts++
		c.mu.Unlock()
		c.logger.Info("PostgreSQL restarted", "pid", ch.pid)
		return ch, true
	}
}

// shutdown stops ch: a fast shutdown (SIGINT: roll back open transactions,
// checkpoint, exit) unless immediate, falling back to an immediate one
// (SIGQUIT: exit now, crash recovery on next start) after StopTimeout or
// when Stop's context ends, and to SIGKILL as a last resort.
func (c *Cluster) shutdown(ch *child, immediate bool) error {
	if !immediate {
		ch.signal(syscall.SIGINT)
		timer := time.NewTimer(c.opts.StopTimeout)
		defer timer.Stop()
		select {
		case <-ch.exited:
			return exitError(ch)
		case <-timer.C:
			c.logger.Warn("PostgreSQL fast shutdown is taking too long; sending immediate shutdown", "pid", ch.pid)
		case <-c.hurry:
		}
	}
	ch.signal(syscall.SIGQUIT)
	quit := time.NewTimer(quitGrace)
	defer quit.Stop()
	select {
	case <-ch.exited:
		return exitError(ch)
	case <-quit.C:
	}
	c.logger.Error("PostgreSQL ignores immediate shutdown; killing it", "pid", ch.pid)
	ch.signal(syscall.SIGKILL)
	<-ch.exited
	return fmt.Errorf("pgmanage: postgres (pid %d) had to be killed", ch.pid)
}

func exitError(ch *child) error {
	if ch.err != nil {
		return fmt.Errorf("pgmanage: postgres (pid %d) exited: %w", ch.pid, ch.err)
	}
	return nil
}
