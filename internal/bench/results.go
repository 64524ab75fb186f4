package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// BaselineVariant names the runs of the time-sensitive groups alone on an
// idle, QoS-off server.
const BaselineVariant = "baseline"

// SeriesBucket is the resolution of the throughput time series.
const SeriesBucket = 100 * time.Millisecond

// Results is everything one `tierdb-bench` invocation measured; it is
// written to results.json and is all the report is made from.
type Results struct {
	Scenario *Scenario   `json:"scenario"`
	Command  string      `json:"command"`
	Quick    bool        `json:"quick"`
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished"`
	Machine  Machine     `json:"machine"`
	Layout   Layout      `json:"layout"`
	Tierdb   string      `json:"tierdb"`
	Postgres string      `json:"postgres"`
	Runs     []RunResult `json:"runs"`
	// Summary and Targets are derived from Runs (Summarize, Evaluate).
	Summary *Summary       `json:"summary,omitempty"`
	Targets []TargetResult `json:"targets,omitempty"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	NProc    int    `json:"nproc"`
	CPUModel string `json:"cpuModel"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	// LoadAvg is /proc/loadavg at the start and the end: the machine may be
	// shared, and other work on it skews the figures.
	LoadAvgStart string `json:"loadAvgStart"`
	LoadAvgEnd   string `json:"loadAvgEnd"`
}

// Layout is where the processes ran.
type Layout struct {
	Mode       string  `json:"mode"` // split or shared
	ServerCPUs []int   `json:"serverCPUs"`
	LoadCPUs   []int   `json:"loadCPUs"`
	PGCPUQuota float64 `json:"pgCPUQuota,omitempty"` // CPUs, 0 = none
	// ServerCgroup: PostgreSQL and tierdb shared a cpu cgroup of their own.
	ServerCgroup bool `json:"serverCgroup,omitempty"`
	// Nodes is how many PostgreSQL nodes there are (primary and standbys);
	// with a quota each has its own cgroup capped at PGCPUQuota.
	Nodes int    `json:"nodes,omitempty"`
	Text  string `json:"text"`
}

// RunResult is one variant (or the baseline) in one repetition, on a fresh
// tierdb process.
type RunResult struct {
	Rep     int       `json:"rep"` // 1-based
	Variant string    `json:"variant"`
	Args    []string  `json:"args"` // the variant's `tierdb serve` flags
	Start   time.Time `json:"start"`
	// Seconds from the run's start (every client connected and its tier
	// set) to the last group's end.
	WallSeconds float64 `json:"wallSeconds"`
	// CutOff is set when maxRunTime ended the run.
	CutOff bool       `json:"cutOff,omitempty"`
	Groups []GroupRun `json:"groups"`
	// TSStart and TSEnd bound the time-sensitive phase, in seconds from the
	// run's start: the first operation of any time-sensitive group to the
	// end of the last one. Zero when there is no such group.
	TSStart float64 `json:"tsStart"`
	TSEnd   float64 `json:"tsEnd"`
	// Server is CPU accounting of the server side over the run.
	Server ServerUsage `json:"server"`
	// Diagnostics say where the server side's time went.
	Diagnostics Diagnostics `json:"diagnostics"`
	// QoSStatus is tierdb's {qosStatus: 1} reply at the end of a QoS-on run.
	QoSStatus json.RawMessage `json:"qosStatus,omitempty"`
	// Repl are the replSetGetStatus polls of a replicated run, ReplStatus
	// the last reply, and Periods the per-period series derived from them
	// and from the clients' reads.
	Repl       []ReplSample    `json:"repl,omitempty"`
	ReplStatus json.RawMessage `json:"replStatus,omitempty"`
	Periods    []PeriodStats   `json:"periods,omitempty"`
	// Users are the per-user groups' users, Fairness what they got.
	Users    []UserRun `json:"users,omitempty"`
	Fairness *Fairness `json:"fairness,omitempty"`
}

// GroupRun is one group's figures in one run.
type GroupRun struct {
	Name    string `json:"name"`
	Tier    string `json:"tier"`
	Role    string `json:"role"`
	Clients int    `json:"clients"`
	// Latency of every successful operation.
	Latency    *Histogram `json:"latency"`
	Ops        int64      `json:"ops"`
	Errors     int64      `json:"errors"`
	FirstError string     `json:"firstError,omitempty"`
	// Start and End: the group's first operation sent and last answered,
	// in seconds from the run's start.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Series counts the operations answered in each SeriesBucket from the
	// run's start.
	Series []int32 `json:"series"`
	// ReadSeries counts the reads (and scans) among them.
	ReadSeries []int32 `json:"readSeries,omitempty"`
	// ReadPreference is the routing of the group's reads in this run.
	ReadPreference *ReadPreference `json:"readPreference,omitempty"`
	// Staleness are an S group's figures (kind staleness).
	Staleness *StalenessRun `json:"staleness,omitempty"`
	// Samples are per client: [send time µs from the run's start, latency
	// µs] of each operation, at most SampleCap per client (a uniform random
	// subset beyond that), in time order.
	Samples [][][2]int64 `json:"samples,omitempty"`
}

// ServerUsage is where the server side's CPU time went during a run.
type ServerUsage struct {
	// TierdbCPU and PostgresCPU are user+system CPU seconds of the tierdb
	// process and of all PostgreSQL processes.
	TierdbCPU   float64 `json:"tierdbCPU"`
	PostgresCPU float64 `json:"postgresCPU"`
	// TierdbAllocBytes is what tierdb's Go heap allocated over the run and
	// TierdbGCs how many collections it ran (its /metrics).
	TierdbAllocBytes float64 `json:"tierdbAllocBytes"`
	TierdbGCs        int64   `json:"tierdbGCs"`
	// BusyPct is how busy the server CPUs were (all processes, including
	// other tenants), StealPct the time the hypervisor ran something else.
	BusyPct  float64 `json:"busyPct"`
	StealPct float64 `json:"stealPct"`
	IOWait   float64 `json:"ioWaitPct"`
	// LoadGenCPUPct is this harness's own CPU use (the load generator) and
	// LoadBusyPct how busy the load generator's CPUs were, in percent of
	// those CPUs: a saturated load generator delays the clients' view of
	// their answers.
	LoadGenCPUPct float64 `json:"loadGenCPUPct"`
	LoadBusyPct   float64 `json:"loadBusyPct"`
	// OthersPct is the part of BusyPct that was neither tierdb nor
	// PostgreSQL (split layout only): other tenants of the machine.
	OthersPct float64 `json:"othersPct"`
}

// OpsPerSec is the group's throughput over its active span.
func (g GroupRun) OpsPerSec() float64 {
	if g.End <= g.Start {
		return 0
	}
	return float64(g.Ops) / (g.End - g.Start)
}

// LoadResults reads a results.json.
func LoadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Scenario == nil {
		return nil, fmt.Errorf("%s: no scenario in the results", path)
	}
	return &r, nil
}
