package baseline

import (
	"testing"
	"time"

	"tierdb/internal/bench/rig"
)

func TestUsageUntil(t *testing.T) {
	a := snapshot{
		tierdb:   time.Second,
		postgres: map[int]time.Duration{1: time.Second, 2: time.Second},
		cpus:     map[int]rig.CPUTimes{0: {Busy: 10, Idle: 90}, 1: {Idle: 100}},
	}
	b := snapshot{
		tierdb: 3 * time.Second,
		// PID 2 ended (its time is lost), PID 3 started (counts from zero).
		postgres: map[int]time.Duration{1: 2 * time.Second, 3: time.Second},
		cpus:     map[int]rig.CPUTimes{0: {Busy: 50, Steal: 10, Idle: 120, IOWait: 20}, 1: {Busy: 100, Idle: 100}},
	}
	u := a.until(b, 1000)
	if u.TierdbCPUusPerOp != 2000 || u.PostgresCPUusPerOp != 2000 {
		t.Errorf("per op: tierdb %v pg %v, want 2000 µs each", u.TierdbCPUusPerOp, u.PostgresCPUusPerOp)
	}
	if len(u.CPUBusyPct) != 2 || u.CPUBusyPct[0] != 50 || u.CPUBusyPct[1] != 100 {
		t.Errorf("busy = %v, want [50 100]", u.CPUBusyPct)
	}
}
