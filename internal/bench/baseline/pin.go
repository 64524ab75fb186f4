package baseline

import (
	"fmt"

	"tierdb/internal/bench/rig"
	"tierdb/internal/osprio"
)

// The CPU layout on a two-core machine: the load generator must not take
// CPU time from the servers it measures.
const (
	loadCPU   = 0
	serverCPU = 1
)

// pinLoadGenerator makes this whole process run on loadCPU.
func pinLoadGenerator() error {
	if online, err := osprio.OnlineCPUs(); err == nil && len(online) < 2 {
		return fmt.Errorf("pinning needs two CPUs and this machine has %d; use --pin=false", len(online))
	}
	return rig.PinSelf([]int{loadCPU})
}
