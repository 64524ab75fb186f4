package baseline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tierdb/internal/bench"
)

// The aims from the issue. They are not flags: the benchmark exists to
// check them, not to tune them.
const (
	aimMinRatio       = 0.60
	aimMaxAddedP50Us  = 150.0
	aimRatioLabel     = "≥ 60% of direct ops/s"
	aimAddedP50Label  = "≤ 150 µs"
	summaryMedianNote = "median of the rounds"
)

// figures are the medians of one (operation, target) over the rounds.
type figures struct {
	OpsPerSec          float64 `json:"opsPerSec"`
	P50us              float64 `json:"p50Us"`
	P99us              float64 `json:"p99Us"`
	TierdbCPUusPerOp   float64 `json:"tierdbCpuUsPerOp"`
	PostgresCPUusPerOp float64 `json:"postgresCpuUsPerOp"`
	ServerCPUBusyPct   float64 `json:"serverCpuBusyPct"`
}

// summary compares tierdb with direct SQL for one operation.
type summary struct {
	Op          string  `json:"op"`
	Tierdb      figures `json:"tierdb"`
	Direct      figures `json:"direct"`
	Ratio       float64 `json:"ratio"`
	AddedP50us  float64 `json:"addedP50Us"`
	RatioMet    bool    `json:"ratioAimMet"`
	AddedP50Met bool    `json:"addedP50AimMet"`
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
		OpsPerSec:          bench.Median(ops),
		P50us:              bench.Median(p50),
		P99us:              bench.Median(p99),
		TierdbCPUusPerOp:   bench.Median(tcpu),
		PostgresCPUusPerOp: bench.Median(pgcpu),
		ServerCPUBusyPct:   bench.Median(busy),
	}, errs
}

// targets are the aims per operation, listed as the scenarios' reports
// list their acceptance targets.
func targets(sums []summary) []bench.TargetRow {
	var rows []bench.TargetRow
	for _, s := range sums {
		rows = append(rows,
			bench.TargetRow{
				Name: "throughput vs direct", Variant: s.Op, Limit: aimRatioLabel, Pass: s.RatioMet,
				Measured: fmt.Sprintf("%.0f%% (%.0f vs %.0f ops/s)", 100*s.Ratio, s.Tierdb.OpsPerSec, s.Direct.OpsPerSec),
			},
			bench.TargetRow{
				Name: "p50 added", Variant: s.Op, Limit: aimAddedP50Label, Pass: s.AddedP50Met,
				Measured: fmt.Sprintf("%+.0f µs (%s vs %s)", s.AddedP50us, bench.FormatMicros(s.Tierdb.P50us), bench.FormatMicros(s.Direct.P50us)),
			})
	}
	return rows
}

// markdownTable is the side-by-side comparison.
func markdownTable(sums []summary) string {
	var b strings.Builder
	b.WriteString("| operation | tierdb ops/s | direct ops/s | ratio | tierdb p50 | tierdb p99 | direct p50 | direct p99 | added p50 |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f%% | %s | %s | %s | %s | %+.0f µs |\n",
			s.Op, s.Tierdb.OpsPerSec, s.Direct.OpsPerSec, 100*s.Ratio,
			bench.FormatMicros(s.Tierdb.P50us), bench.FormatMicros(s.Tierdb.P99us),
			bench.FormatMicros(s.Direct.P50us), bench.FormatMicros(s.Direct.P99us), s.AddedP50us)
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
			cpuMicros(s.Tierdb.TierdbCPUusPerOp), cpuMicros(s.Tierdb.PostgresCPUusPerOp),
			cpuMicros(s.Tierdb.TierdbCPUusPerOp+s.Tierdb.PostgresCPUusPerOp),
			cpuMicros(s.Direct.PostgresCPUusPerOp),
			s.Tierdb.ServerCPUBusyPct, s.Direct.ServerCPUBusyPct)
	}
	return b.String()
}

// cpuMicros prints a CPU time per operation, often a few µs: with a
// decimal below 10 µs, else as latencies are.
func cpuMicros(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f µs", v)
	}
	return bench.FormatMicros(v)
}

// report is everything baseline.json holds.
type report struct {
	Command     string        `json:"command"`
	MakeCommand string        `json:"makeCommand"`
	Started     time.Time     `json:"started"`
	Finished    time.Time     `json:"finished"`
	Machine     bench.Machine `json:"machine"`
	Layout      string        `json:"layout"`
	PostgreSQL  string        `json:"postgres"`
	Tierdb      string        `json:"tierdb"`
	Settings    settings      `json:"settings"`
	Summary     []summary     `json:"summary"`
	Runs        []runResult   `json:"runs"`
}

// settings echoes the effective configuration.
type settings struct {
	Records    int      `json:"records"`
	Clients    int      `json:"clients"`
	Duration   string   `json:"duration"`
	Warmup     string   `json:"warmup"`
	Rounds     int      `json:"rounds"`
	Pin        bool     `json:"pin"`
	TierdbArgs []string `json:"tierdbArgs,omitempty"`
	// ServerMonitoring is the driver's serverMonitoringMode.
	ServerMonitoring string `json:"serverMonitoring"`
}

// markdown is baseline.md, laid out as the scenarios' report.md.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# tierdb bench: baseline\n\n")
	p("What tierdb costs on top of the PostgreSQL it stores data in: each operation through tierdb (MongoDB Go driver) against the same operation as SQL with pgx straight on the same PostgreSQL.\n\n")
	p("- Command: `%s` (= `%s`)\n", r.Command, r.MakeCommand)
	p("- Started %s, finished %s (UTC)\n", r.Started.Format("2006-01-02 15:04:05"), r.Finished.Format("15:04:05"))
	p("- Figures are medians of %d round(s), each figure's median taken on its own; each round runs every operation on tierdb, then direct.\n\n", r.Settings.Rounds)

	p("## Settings\n\n")
	p("%d records (_id 0…%d, %d string fields of %d bytes), %d clients each with its own connection, %s measured after %s warm-up per run. MongoDB Go driver with serverMonitoringMode=%s; pgx with its default statement cache.",
		r.Settings.Records, r.Settings.Records-1, fieldCount, fieldLen, r.Settings.Clients,
		r.Settings.Duration, r.Settings.Warmup, r.Settings.ServerMonitoring)
	if len(r.Settings.TierdbArgs) > 0 {
		p(" tierdb serve flags: `%s`.", strings.Join(r.Settings.TierdbArgs, " "))
	}
	p("\n\n")

	p("%s", bench.MachineMarkdown(r.Machine, r.PostgreSQL, r.Tierdb, r.Layout))
	p("%s", bench.TargetsMarkdown(targets(r.Summary)))

	p("## Latency and throughput (%s)\n\n", summaryMedianNote)
	b.WriteString(markdownTable(r.Summary))
	p("\n### Server side\n\nServer CPU time per operation (user + system, from /proc), and how busy the server CPU was, whoever used it.\n\n")
	b.WriteString(cpuTable(r.Summary, r.Settings.Pin))
	var errs uint64
	for _, s := range r.Summary {
		errs += s.Errors
	}
	if errs > 0 {
		p("\n**%d operations failed**; see the runs in baseline.json.\n", errs)
	}
	p("\nRaw data: `baseline.json` (every round's figures).\n")
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
