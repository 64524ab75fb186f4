package qos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tierdb/internal/mongoerr"
)

// Config is the whole QoS configuration: the priority channel and the OS
// treatment of each tier's PostgreSQL backends. It is a plain value; changing
// the running configuration means validating a new Config and swapping it in.
type Config struct {
	// Enabled false is --qos=off: no admission, no OS priorities.
	Enabled         bool
	Threshold       int
	StarvationGuard time.Duration
	// Anticipation is ChannelOptions.Anticipation.
	Anticipation time.Duration
	// Nice is the nice level of each tier's backends.
	Nice [NumTiers]int
	// Slice is the CPU time slice of each tier's backends (0: the
	// kernel's default). Under the EEVDF scheduler (Linux 6.12 and
	// later) a backend that wakes with a shorter slice than the running
	// task's preempts it at once; a lower nice value alone only weighs
	// its share, and it waits for the running task's slice to end.
	Slice [NumTiers]time.Duration
	// SliceAuto: the high tier's slice follows the machine (the default).
	// It is AutoSlice while other programs keep the server's CPUs busy and
	// the kernel's default otherwise (tierctl, hostload.go); Slice[High]
	// is then 0.
	SliceAuto bool
	// Pools are the CPU pools of seed 003; all empty means "no pools".
	Pools CPUPools
	// IO is the I/O priority of each tier's backends and of PostgreSQL's
	// background processes (seed 002, the user-space part).
	IO IOConfig
	// Fair configures the Gate: per-user fair shares within a tier and
	// delivered parallelism (seed 004).
	Fair FairConfig
}

// FairConfig is what GateOptions takes from the configuration.
type FairConfig struct {
	// Parallelism is P (0: no limit); Restricted the lower tiers' share
	// of it while the high tier is active (0: no restriction), which it
	// stays for HighHold after its last request ends.
	Parallelism, Restricted int
	HighHold                time.Duration
	// ParallelismForFairness: P buys no throughput, only fairness between
	// users (the calibration found no limit as fast, Calibration.ForFairness),
	// so the gate applies it only while two or more users have requests at
	// the normal and low tiers, in process or waiting; one user alone runs
	// without a limit, and its requests never queue at the gate. A P set by
	// hand always holds.
	ParallelismForFairness bool
	// Anticipation is how long a tier's scheduling round may wait for a
	// user with quota left whose next request is likely on its way
	// (tierRound.anticipate; 0: never, work-conserving); with
	// AutoAnticipation the ζ control sets it per tier (the default).
	Anticipation     time.Duration
	AutoAnticipation bool
	// UnfairnessBound and CVBound bound the ζ control (U_f°, V_l°).
	UnfairnessBound, CVBound float64
}

// minSlice and maxSlice bound a custom slice: the kernel's own bounds.
const (
	minSlice = 100 * time.Microsecond
	maxSlice = 100 * time.Millisecond
)

// AutoSlice is the high tier's slice under SliceAuto while other programs
// keep the server's CPUs busy: the shortest the kernel keeps, which let a
// high-tier backend beside a busy loop run at its idle speed (shared-host
// in docs/benchmarks.md).
const AutoSlice = minSlice

// CPUPools are CPU sets: high-tier backends run in Priority; normal and low
// backends run in Standard while no high-tier request is in process and in
// Restricted while one is.
type CPUPools struct {
	Priority, Standard, Restricted []int
}

// IOPrio is an I/O scheduling class and level, as ioprio_set(2) knows them.
type IOPrio struct {
	Class IOClass
	Level int // 0 (highest) to 7; only for realtime and best-effort
}

// IOClass names ioprio classes without depending on the OS layer.
type IOClass string

const (
	IONone       IOClass = "none"
	IORealtime   IOClass = "realtime"
	IOBestEffort IOClass = "best-effort"
	IOIdle       IOClass = "idle"
)

// IOConfig holds the I/O priorities tierdb applies.
type IOConfig struct {
	// Background is the checkpointer, background writer and autovacuum:
	// work no request waits for directly.
	Background IOPrio
	// WALWriter is PostgreSQL's WAL writer, and with replicas the WAL
	// senders, WAL receivers and a standby's replay (startup) process: the
	// path a commit takes to durability and to the standbys. Majority
	// writes and fresh standby reads wait on it.
	WALWriter IOPrio
	Tiers     [NumTiers]IOPrio
}

// DefaultConfig is QoS on with the paper's defaults: threshold 1, nice -19
// for the high tier, +10 and +19 for normal and low while the high tier is
// active (0 otherwise: tierctl), no CPU pools, no starvation guard; the
// kernel's own slices.
func DefaultConfig() Config {
	return Config{
		Enabled:   true,
		Threshold: 1,
		Nice:      [NumTiers]int{-19, 10, 19},
		SliceAuto: true,
		Fair:      FairConfig{UnfairnessBound: 0.10, CVBound: 1.0, HighHold: 100 * time.Millisecond, AutoAnticipation: true},
		IO: IOConfig{
			Background: IOPrio{Class: IOIdle},
			WALWriter:  IOPrio{Class: IOBestEffort, Level: 0},
			Tiers: [NumTiers]IOPrio{
				{Class: IOBestEffort, Level: 0},
				{Class: IOBestEffort, Level: 4},
				{Class: IOBestEffort, Level: 7},
			},
		},
	}
}

// Enabled reports whether any pool is configured.
func (p CPUPools) Enabled() bool {
	return len(p.Priority)+len(p.Standard)+len(p.Restricted) > 0
}

// ForTier is the CPU set a backend of tier t runs in.
func (p CPUPools) ForTier(t Tier, highActive bool) []int {
	switch {
	case t == High:
		return p.Priority
	case highActive:
		return p.Restricted
	}
	return p.Standard
}

// Validate checks c against the CPUs that exist. Errors are BadValue and say
// what is allowed.
func (c Config) Validate(onlineCPUs []int) error {
	if c.Threshold < 1 {
		return mongoerr.Newf(mongoerr.BadValue, "threshold must be an integer ≥ 1, got %d", c.Threshold)
	}
	if c.StarvationGuard < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "starvation guard must be ≥ 0 ms, got %v", c.StarvationGuard)
	}
	if c.Anticipation < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "anticipation must be ≥ 0 ms, got %v", c.Anticipation)
	}
	if c.Fair.Parallelism < 0 || c.Fair.Restricted < 0 || c.Fair.HighHold < 0 || c.Fair.Anticipation < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "parallelism and restricted must be integers ≥ 0 (0: no limit), got %d and %d", c.Fair.Parallelism, c.Fair.Restricted)
	}
	if !(c.Fair.UnfairnessBound > 0 && c.Fair.UnfairnessBound <= 10) || !(c.Fair.CVBound > 0 && c.Fair.CVBound <= 100) {
		return mongoerr.Newf(mongoerr.BadValue, "fair unfairness bound must be in (0, 10] and the CV bound in (0, 100], got %v and %v", c.Fair.UnfairnessBound, c.Fair.CVBound)
	}
	for t, n := range c.Nice {
		if n < -20 || n > 19 {
			return mongoerr.Newf(mongoerr.BadValue, "nice level of tier %s must be between -20 and 19, got %d", Tier(t), n)
		}
	}
	for t, d := range c.Slice {
		if d != 0 && (d < minSlice || d > maxSlice) {
			return mongoerr.Newf(mongoerr.BadValue, "slice of tier %s must be 0 (the kernel's default) or from %v to %v, got %v", Tier(t), minSlice, maxSlice, d)
		}
	}
	if c.SliceAuto && c.Slice[High] != 0 {
		return mongoerr.Newf(mongoerr.BadValue, "the high tier's slice is either auto or a duration, not both (got auto and %v)", c.Slice[High])
	}
	if c.Pools.Enabled() {
		for _, pool := range []struct {
			name string
			cpus []int
		}{{"priority", c.Pools.Priority}, {"standard", c.Pools.Standard}, {"restricted", c.Pools.Restricted}} {
			if len(pool.cpus) == 0 {
				return mongoerr.Newf(mongoerr.BadValue, "CPU pool %q is empty: give all three pools (priority, standard, restricted) or none", pool.name)
			}
			for _, cpu := range pool.cpus {
				if !slices.Contains(onlineCPUs, cpu) {
					return mongoerr.Newf(mongoerr.BadValue, "CPU pool %q names CPU %d, which does not exist; online CPUs: %v", pool.name, cpu, onlineCPUs)
				}
			}
		}
	}
	for _, p := range append([]IOPrio{c.IO.Background, c.IO.WALWriter}, c.IO.Tiers[:]...) {
		if err := p.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (p IOPrio) validate() error {
	switch p.Class {
	case IORealtime, IOBestEffort:
		if p.Level < 0 || p.Level > 7 {
			return mongoerr.Newf(mongoerr.BadValue, "I/O priority level must be 0-7, got %d", p.Level)
		}
	case IONone, IOIdle:
		if p.Level != 0 {
			return mongoerr.Newf(mongoerr.BadValue, "I/O class %s takes no level", p.Class)
		}
	default:
		return mongoerr.Newf(mongoerr.BadValue, "I/O class must be one of none, realtime, best-effort, idle; got %q", p.Class)
	}
	return nil
}

func (p IOPrio) String() string {
	if p.Class == IORealtime || p.Class == IOBestEffort {
		return fmt.Sprintf("%s/%d", p.Class, p.Level)
	}
	return string(p.Class)
}

// ParseIOPrio reads "idle", "none", "best-effort/4", "realtime/0".
func ParseIOPrio(s string) (IOPrio, error) {
	class, level, hasLevel := strings.Cut(s, "/")
	p := IOPrio{Class: IOClass(class)}
	if hasLevel {
		n, err := strconv.Atoi(level)
		if err != nil {
			return p, mongoerr.Newf(mongoerr.BadValue, "bad I/O priority %q: level must be a number 0-7", s)
		}
		p.Level = n
	} else if p.Class == IOBestEffort || p.Class == IORealtime {
		p.Level = 4
	}
	return p, p.validate()
}
