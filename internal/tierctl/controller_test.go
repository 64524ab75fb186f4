package tierctl

import (
	"testing"

	"tierdb/internal/qos"
)

// A high-tier flip (one per high-tier request) wakes the controller's
// goroutine only when there is something to change: at every flip with CPU
// pools; without them only at the first request after a calm spell, when
// the lower tiers' nice levels come into force. Otherwise each high-tier
// request would wake a goroutine that competes with it for the CPU, to do
// nothing.
func TestHighActiveFlipsWakeTheControllerOnlyForAChange(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pools, niced bool
		nice         [qos.NumTiers]int
		wake         bool
	}{
		{name: "pools", pools: true, niced: true, nice: qos.DefaultConfig().Nice, wake: true},
		{name: "calm, low at 19", nice: qos.DefaultConfig().Nice, wake: true},
		{name: "already niced", niced: true, nice: qos.DefaultConfig().Nice},
		{name: "no lower tier above 0", nice: [qos.NumTiers]int{-19, 0, 0}},
	} {
		cfg := qos.DefaultConfig()
		cfg.Nice = tc.nice
		if tc.pools {
			cfg.Pools = qos.CPUPools{Priority: []int{0}, Standard: []int{0}, Restricted: []int{0}}
		}
		// No goroutine: the test reads what it would be woken by.
		c := &Controller{cfg: cfg, niced: tc.niced, dirty: make(chan struct{}, 1)}
		c.SetHighActive(true)
		c.SetHighActive(false)
		if woken := len(c.dirty) == 1; woken != tc.wake {
			t.Errorf("%s: woken %v, want %v", tc.name, woken, tc.wake)
		}
		if c.highActive || c.highEnded.IsZero() {
			t.Errorf("%s: the last flip was to inactive, at a time", tc.name)
		}
	}
}
