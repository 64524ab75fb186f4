package storage

import (
	"context"
	"errors"
	"fmt"
)

// Ready reports whether requests can be served: the primary is known (no
// failover under way) and answers a ping over the monitoring pool, which
// never queues behind the tiers' requests.
func (s *Store) Ready(ctx context.Context) error {
	t := s.topo.Load()
	if t == nil || len(t.nodes) == 0 {
		return errors.New("no primary known")
	}
	if t.changing != nil {
		return errors.New("failover under way: no primary known")
	}
	n := t.nodes[0]
	if err := n.probe.Ping(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("PostgreSQL primary %s does not answer", n.Name)
		}
		return fmt.Errorf("PostgreSQL primary %s unreachable: %w", n.Name, err)
	}
	return nil
}
