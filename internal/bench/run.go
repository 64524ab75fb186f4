package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tierdb/internal/bench/rig"
)

// Options configure Run.
type Options struct {
	Scenario *Scenario
	// OutDir receives results.json, summary.csv, report.md, the plots and
	// the servers' logs; created if missing.
	OutDir string
	// Tierdb is the tierdb executable to run servers from.
	Tierdb string
	// Repeat, when > 0, overrides the scenario's repetitions.
	Repeat int
	// Quick shortens everything for CI (see Scenario.Quick).
	Quick   bool
	Layout  LayoutOptions
	NoPlots bool
	// Command is the command line, for the report.
	Command string
	// Stdout gets one line per run and the paths written; nil: discarded.
	Stdout io.Writer
	// Progress gets a live status line (carriage returns); nil: none.
	Progress io.Writer
	// Logger gets the servers' supervision warnings; nil: discarded.
	Logger *slog.Logger
	// CPUProfile, when > 0, starts every tierdb with --pprof and takes a
	// CPU profile of it that long from the end of the warm-up, written
	// beside its log as rep<N>-<variant>.cpu.pb.gz.
	CPUProfile time.Duration
}

// Run runs the scenario and writes its outputs to o.OutDir. A missed
// target is not an error; failed operations are reported in the results
// and make Run return an error after writing them. In the split layout Run
// pins the calling process to the load generator's CPUs and leaves it so.
func Run(ctx context.Context, o Options) (*Results, error) {
	if o.Scenario == nil {
		return nil, errors.New("bench: no scenario")
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sc := o.Scenario.Clone()
	if o.Quick {
		sc = sc.Quick()
	}
	if o.Repeat > 0 {
		sc.Repeat = o.Repeat
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	lo := o.Layout
	if lo.PGCPUQuota == 0 {
		lo.PGCPUQuota = sc.PGCPUQuota
	}
	if lo.Mode == "" {
		lo.Mode = sc.Layout
	}
	lo.ServerCgroup = lo.ServerCgroup || sc.ServerCgroup
	lo.Nodes = sc.Replicas + 1
	layout, err := planLayout(lo)
	if err != nil {
		return nil, err
	}
	clients := make([]int, len(sc.Groups))
	for i, g := range sc.Groups {
		clients[i] = g.Clients.Resolve(len(layout.ServerCPUs))
		if clients[i] < 1 {
			return nil, fmt.Errorf("group %s: clients %q is %d with %d server CPUs", g.Name, g.Clients.Expr, clients[i], len(layout.ServerCPUs))
		}
	}
	if _, err := os.Stat(o.Tierdb); err != nil {
		return nil, fmt.Errorf("tierdb binary: %w", err)
	}
	if layout.Mode == LayoutSplit {
		if err := rig.PinSelf(layout.LoadCPUs); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(o.OutDir, "logs"), 0o755); err != nil {
		return nil, err
	}

	res := &Results{
		Scenario: sc, Command: o.Command, Quick: o.Quick, Started: time.Now().UTC().Truncate(time.Second),
		Machine: DescribeMachine(), Layout: layout, Tierdb: TierdbVersion(o.Tierdb),
	}
	fmt.Fprintf(o.Stdout, "scenario %s: %d group(s), variants %s, %d repetition(s)%s\n",
		sc.Name, len(sc.Groups), variantNames(sc), sc.Repeat, map[bool]string{true: " (quick)"}[o.Quick])
	fmt.Fprintln(o.Stdout, "layout:", layout.Text)

	pg, err := startPostgres(ctx, sc.Postgres, sc.Replicas, layout, o.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := pg.stop(); serr != nil {
			fmt.Fprintln(os.Stderr, "bench:", serr)
		}
	}()
	res.Postgres = pg.version(ctx)

	e := &engine{opts: o, sc: sc, layout: layout, clients: clients, pg: pg, wl: newWorkload(sc)}
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	for rep := 1; rep <= sc.Repeat; rep++ {
		for _, v := range runOrder(sc, rep) {
			run, err := e.runOne(ctx, rep, v)
			if err != nil {
				return nil, fmt.Errorf("repetition %d, %s: %w", rep, v.Name, err)
			}
			res.Runs = append(res.Runs, run)
			fmt.Fprintln(o.Stdout, runLine(sc, run))
		}
	}
	res.Finished = time.Now().UTC().Truncate(time.Second)
	res.Machine.LoadAvgEnd = rig.ReadLoadAvg()
	res.Summary = Summarize(sc, res.Runs)
	res.Targets = Evaluate(sc, res.Summary)

	if err := WriteResults(o.OutDir, res); err != nil {
		return res, err
	}
	if err := WriteReport(o.OutDir, res, ReportOptions{NoPlots: o.NoPlots}); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Stdout, "wrote %s\n", filepath.Join(o.OutDir, "report.md"))
	var failed []string
	for _, r := range res.Runs {
		for _, g := range r.Groups {
			if g.Errors > 0 {
				failed = append(failed, fmt.Sprintf("rep %d %s %s: %d failed operations (first: %s)", r.Rep, r.Variant, g.Name, g.Errors, g.FirstError))
			}
		}
	}
	if len(failed) > 0 {
		return res, errors.New(strings.Join(failed, "\n"))
	}
	return res, nil
}

// runOrder is the order of the runs in repetition rep (from 1): the idle
// baseline first, when measured, then the variants rotated by rep−1, so
// that a drift across a repetition (the updated table bloating,
// autovacuum, a neighbour on the VM) does not favour one of them. Over a
// multiple of the variant count of repetitions, each variant runs equally
// often in each position; the built-in A/B scenarios repeat an even
// number of times for that.
func runOrder(sc *Scenario, rep int) []Variant {
	var plan []Variant
	if sc.BaselineOn() {
		plan = append(plan, Variant{Name: BaselineVariant, QoS: "off", Auth: sc.usesUsers()})
	}
	n := len(sc.Variants)
	for i := range n {
		plan = append(plan, sc.Variants[(rep-1+i)%n])
	}
	return plan
}

// WriteResults writes results.json.
func WriteResults(dir string, res *Results) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644)
}

func variantNames(sc *Scenario) string {
	names := make([]string, len(sc.Variants))
	for i, v := range sc.Variants {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// runLine is the one-line account of a run printed as it ends.
func runLine(sc *Scenario, r RunResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rep %d %-10s %5.1f s", r.Rep, r.Variant, r.WallSeconds)
	for _, g := range r.Groups {
		st := groupStats(r, g, sc)
		fmt.Fprintf(&b, " | %s: %.0f ops/s p50 %s p99.9 %s", g.Name, st.Throughput, fmtMicros(st.P50), fmtMicros(st.P999))
		if st.Before > 0 {
			fmt.Fprintf(&b, " (before/during/after %.0f/%.0f/%.0f)", st.Before, st.During, st.After)
		}
		if g.Errors > 0 {
			fmt.Fprintf(&b, " %d ERRORS", g.Errors)
		}
	}
	if r.CutOff {
		b.WriteString(" | CUT OFF at maxRunTime")
	}
	return b.String()
}
