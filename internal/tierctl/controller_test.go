package tierctl

import (
	"testing"

	"tierdb/internal/qos"
)

// A high-tier flip (one per high-tier request) asks the pool mover to run
// only when CPU pools exist: otherwise it would wake a goroutine that
// competes with that request for the CPU, to do nothing.
func TestHighActiveFlipsWakeThePoolMoverOnlyWithPools(t *testing.T) {
	for _, pools := range []bool{false, true} {
		cfg := qos.DefaultConfig()
		if pools {
			cfg.Pools = qos.CPUPools{Priority: []int{0}, Standard: []int{0}, Restricted: []int{0}}
		}
		// No mover goroutine: the test reads what it would be woken by.
		c := &Controller{cfg: cfg, poolsDirty: make(chan struct{}, 1)}
		c.SetHighActive(true)
		c.SetHighActive(false)
		if woken := len(c.poolsDirty) == 1; woken != pools {
			t.Errorf("pools %v: mover woken %v", pools, woken)
		}
		if c.highActive {
			t.Errorf("pools %v: the last flip was to inactive", pools)
		}
	}
}
