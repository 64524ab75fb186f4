package pgmanage

import (
	"context"
	"errors"
	"fmt"
)

// Stop shuts the server down with a fast shutdown (open transactions are
// rolled back, then a checkpoint; after StopTimeout it becomes immediate), ends
// supervision and removes the socket directory. If ctx ends first the
// server is shut down immediately instead (safe: PostgreSQL recovers from
// its WAL on the next start), which Stop still waits for, and Stop reports
// ctx's error. Calling Stop again returns the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return c.stopErr
	}
	c.endLife()
	var errs []error
	select {
	case <-c.done:
	case <-ctx.Done():
		close(c.hurry)
		<-c.done
		errs = append(errs, fmt.Errorf("pgmanage: stop: %w; PostgreSQL was shut down immediately", ctx.Err()))
	}
	errs = append(errs, c.shutdownErr)
	if err := c.logFile.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pgmanage: %w", err))
	}
	errs = append(errs, removeSocketDir(c.layout, c.socketDir))
	c.stopped = true
	c.stopErr = errors.Join(errs...)
	return c.stopErr
}
