package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The aims from the issue. They are not flags: the benchmark exists to
// check them, not to tune them.
const (
	aimMinRatio       = 0.60
	aimMaxAddedP50Us  = 150.0
	aimRatioLabel     = "≥60% of direct ops/s"
	aimAddedP50Label  = "≤150 µs added p50"
	summaryMedianNote = "median of the rounds"
)

// figures are the medians of one (operation, target) over the rounds.
type figures struct {
	OpsPerSec          float64 `json:"ops_per_sec"`
	P50us              float64 `json:"p50_us"`
	P99us              float64 `json:"p99_us"`
	TierdbCPUusPerOp   float64 `json:"tierdb_cpu_us_per_op"`
	PostgresCPUusPerOp float64 `json:"postgres_cpu_us_per_op"`
	ServerCPUBusyPct   float64 `json:"server_cpu_busy_pct"`
}

// summary compares tierdb with direct SQL for one operation.
type summary struct {
	Op          string  `json:"op"`
	Tierdb      figures `json:"tierdb"`
	Direct      figures `json:"direct"`
	Ratio       float64 `json:"ratio"`
	AddedP50us  float64 `json:"added_p50_us"`
	RatioMet    bool    `json:"ratio_aim_met"`
	AddedP50Met bool    `json:"added_p50_aim_met"`
	Errors      uint64  `json:"errors"`
}

// summarize takes, per operation and target, the median of each figure
// across rounds. Each figure's median is taken on its own, so the ops/s and
// p50 shown may come from different rounds.
func summarize(results []runResult, ops []opKind, serverCPU int) []summary {
	var out []summary
	for _, op := range ops {
		s := summary{Op: op.String()}
		s.Tierdb, s.Errors = medians(results, op.String(), "tierdb", serverCPU)
		var errs uint64
		s.Direct, errs = medians(results, op.String(), "direct", serverCPU)
		s.Errors += errs
		if s.Direct.OpsPerSec > 0 {
			s.Ratio = s.Tierdb.OpsPerSec / s.Direct.OpsPerSec
		}
		s.AddedP50us = s.Tierdb.P50us - s.Direct.P50us
		s.RatioMet = s.Ratio >= aimMinRatio
		s.AddedP50Met = s.AddedP50us <= aimMaxAddedP50Us
		out = append(out, s)
	}
	return out
}

func medians(results []runResult, op, target string, serverCPU int) (figures, uint64) {
	var ops, p50, p99, tcpu, pgcpu, busy []float64
	var errs uint64
	for _, r := range results {
		if r.Op != op || r.Target != target {
			continue
		}
		ops = append(ops, r.OpsPerSec)
		p50 = append(p50, r.P50us)
		p99 = append(p99, r.P99us)
		tcpu = append(tcpu, r.TierdbCPUusPerOp)
		pgcpu = append(pgcpu, r.PostgresCPUusPerOp)
		if serverCPU < len(r.CPUBusyPct) {
			busy = append(busy, r.CPUBusyPct[serverCPU])
		}
		errs += r.Errors
	}
	return figures{
		OpsPerSec:          median(ops),
		P50us:              median(p50),
		P99us:              median(p99),
		TierdbCPUusPerOp:   median(tcpu),
		PostgresCPUusPerOp: median(pgcpu),
		ServerCPUBusyPct:   median(busy),
	}, errs
}

// median of xs; the mean of the middle two for an even count; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// markdownTable is the side-by-side comparison the issue asks for.
func markdownTable(sums []summary) string {
	var b strings.Builder
	b.WriteString("| operation | tierdb ops/s | direct ops/s | ratio | tierdb p50 | tierdb p99 | direct p50 | direct p99 | added p50 | " +
		aimRatioLabel + " | " + aimAddedP50Label + " |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|:-:|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f%% | %s | %s | %s | %s | %+.0f µs | %s | %s |\n",
			s.Op, s.Tierdb.OpsPerSec, s.Direct.OpsPerSec, 100*s.Ratio,
			us(s.Tierdb.P50us), us(s.Tierdb.P99us), us(s.Direct.P50us), us(s.Direct.P99us),
			s.AddedP50us, passMiss(s.RatioMet), passMiss(s.AddedP50Met))
	}
	return b.String()
}

// cpuTable shows where the server CPU goes per operation, which is what
// decides throughput when the servers share one CPU.
func cpuTable(sums []summary, pinned bool) string {
	var b strings.Builder
	busy := "server CPU busy"
	if !pinned {
		busy = "CPU 1 busy (unpinned)"
	}
	b.WriteString("| operation | tierdb: tierdb CPU/op | tierdb: PostgreSQL CPU/op | tierdb: total | direct: PostgreSQL CPU/op | tierdb: " + busy + " | direct: " + busy + " |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f%% | %.0f%% |\n", s.Op,
			us(s.Tierdb.TierdbCPUusPerOp), us(s.Tierdb.PostgresCPUusPerOp),
			us(s.Tierdb.TierdbCPUusPerOp+s.Tierdb.PostgresCPUusPerOp),
			us(s.Direct.PostgresCPUusPerOp),
			s.Tierdb.ServerCPUBusyPct, s.Direct.ServerCPUBusyPct)
	}
	return b.String()
}

func us(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f µs", v)
	}
	return fmt.Sprintf("%.0f µs", v)
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// report is everything baseline.json holds.
type report struct {
	Command     string      `json:"command"`
	MakeCommand string      `json:"make_command"`
	Started     time.Time   `json:"started"`
	Machine     machine     `json:"machine"`
	Layout      string      `json:"layout"`
	PostgreSQL  string      `json:"postgresql"`
	Tierdb      string      `json:"tierdb"`
	Settings    settings    `json:"settings"`
	Summary     []summary   `json:"summary"`
	Runs        []runResult `json:"runs"`
}

// settings echoes the effective configuration.
type settings struct {
	Records    int      `json:"records"`
	Clients    int      `json:"clients"`
	Duration   string   `json:"duration"`
	Warmup     string   `json:"warmup"`
	Rounds     int      `json:"rounds"`
	Pin        bool     `json:"pin"`
	TierdbArgs []string `json:"tierdb_args,omitempty"`
	// ServerMonitoring is the driver's serverMonitoringMode.
	ServerMonitoring string `json:"server_monitoring"`
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Baseline: tierdb vs. direct PostgreSQL\n\n")
	fmt.Fprintf(&b, "Command: `%s` (= `%s`), started %s.\n\n", r.MakeCommand, r.Command, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %d CPUs, %s, Linux %s, %s; load average at start %s.\n\n",
		r.Machine.CPUs, r.Machine.CPUModel, r.Machine.Kernel, r.Machine.Go, r.Machine.LoadAvg)
	fmt.Fprintf(&b, "PostgreSQL %s; %s.\n\n", r.PostgreSQL, r.Tierdb)
	fmt.Fprintf(&b, "Layout: %s.\n\n", r.Layout)
	fmt.Fprintf(&b, "Workload: %d records (_id 0…%d, %d string fields of %d bytes), %d clients each with its own connection, %s measured after %s warm-up per run, tierdb and direct alternating for %d rounds; figures are the %s. MongoDB Go driver with serverMonitoringMode=%s; pgx with its default statement cache.\n\n",
		r.Settings.Records, r.Settings.Records-1, fieldCount, fieldLen, r.Settings.Clients,
		r.Settings.Duration, r.Settings.Warmup, r.Settings.Rounds, summaryMedianNote, r.Settings.ServerMonitoring)
	b.WriteString(markdownTable(r.Summary))
	b.WriteString("\nServer CPU time per operation (user + system, from /proc):\n\n")
	b.WriteString(cpuTable(r.Summary, r.Settings.Pin))
	var errs uint64
	for _, s := range r.Summary {
		errs += s.Errors
	}
	if errs > 0 {
		fmt.Fprintf(&b, "\n**%d operations failed**; see the runs in baseline.json.\n", errs)
	}
	return b.String()
}

func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "baseline.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "baseline.md"), []byte(r.markdown()), 0o644)
}
