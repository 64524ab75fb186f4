package bench

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ReportOptions tune WriteReport.
type ReportOptions struct {
	NoPlots bool
}

// WriteReport writes summary.csv, report.md and the plots into dir, from
// res alone (so a report can be rebuilt from a results.json). It fills in
// res.Summary and res.Targets when they are missing.
func WriteReport(dir string, res *Results, o ReportOptions) error {
	if res.Summary == nil {
		res.Summary = Summarize(res.Scenario, res.Runs)
	}
	if res.Summary.TotalThroughput == nil {
		// Not stored in results.json; rebuilt from the variants.
		res.Summary.TotalThroughput = map[string]float64{}
		for _, v := range res.Summary.Variants {
			res.Summary.TotalThroughput[v.Variant] = v.Throughput
		}
	}
	if res.Targets == nil {
		res.Targets = Evaluate(res.Scenario, res.Summary)
	}
	if err := writeCSV(filepath.Join(dir, "summary.csv"), res.Summary); err != nil {
		return err
	}
	var plots []plotFile
	if !o.NoPlots {
		var err error
		if plots, err = writePlots(dir, res); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown(res, plots)), 0o644)
}

var csvHeader = []string{
	"variant", "group", "tier", "role", "reps", "ops", "errors",
	"mean_us", "p50_us", "p99_us", "p999_us", "max_us", "ops_per_sec",
	"before_ops_per_sec", "during_ops_per_sec", "after_ops_per_sec",
	"mean_vs_ref", "p50_vs_ref", "p99_vs_ref", "p999_vs_ref", "ops_per_sec_vs_ref", "p999_vs_baseline",
}

func writeCSV(path string, sum *Summary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvHeader)
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	ratio := func(m map[string]float64, k string) string {
		if v, ok := m[k]; ok {
			return strconv.FormatFloat(v, 'f', 4, 64)
		}
		return ""
	}
	for _, g := range sum.Groups {
		m := g.Median
		_ = w.Write([]string{
			g.Variant, g.Group, g.Tier, g.Role, strconv.Itoa(len(g.Reps)), num(m.Ops), num(m.Errors),
			num(m.Mean), num(m.P50), num(m.P99), num(m.P999), num(m.Max), num(m.Throughput),
			num(m.Before), num(m.During), num(m.After),
			ratio(g.VsReference, "mean"), ratio(g.VsReference, "p50"), ratio(g.VsReference, "p99"),
			ratio(g.VsReference, "p999"), ratio(g.VsReference, "throughput"), ratio(g.VsBaseline, "p999"),
		})
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

// markdown renders report.md.
func markdown(res *Results, plots []plotFile) string {
	sc, sum := res.Scenario, res.Summary
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# tierdb bench: %s\n\n", sc.Name)
	if sc.Description != "" {
		p("%s\n\n", strings.TrimSpace(sc.Description))
	}
	p("- Command: `%s`\n", res.Command)
	p("- Started %s, finished %s (UTC)", res.Started.Format("2006-01-02 15:04:05"), res.Finished.Format("15:04:05"))
	if res.Quick {
		p("; **quick mode**: shortened runs, figures only show that everything works")
	}
	p("\n- Figures are medians of %d repetition(s); each repetition runs ", sc.Repeat)
	if sc.BaselineOn() {
		p("the idle baseline (time-sensitive groups alone, QoS off), then ")
	}
	p("each variant in turn, each on a fresh tierdb process; the variants' order rotates by one each repetition.\n\n")

	p("## Settings\n\n")
	p("%d records of %d fields × %d bytes, %s keys; scans read up to %d records; warm-up cut from the noise's \"before\" window: %s.\n\n",
		sc.Records, sc.FieldCount, sc.FieldLength, sc.Distribution, sc.ScanLength, sc.Warmup)
	p("| group | clients | tier | role | mix | keys | mode | starts after | ends |\n|---|--:|---|---|---|---|---|--:|---|\n")
	for _, g := range sc.Groups {
		clients := g.Clients.Expr
		if len(res.Runs) > 0 {
			for _, gr := range res.Runs[len(res.Runs)-1].Groups {
				if gr.Name == g.Name && gr.Clients > 0 && g.Clients.dependsOnCPUs() {
					clients = fmt.Sprintf("%d (%s)", gr.Clients, g.Clients.Expr)
				}
			}
		}
		dist := cmp.Or(g.Distribution, sc.Distribution)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.Name, clients, g.Tier, g.Role, groupMixText(g), dist, modeText(g), g.StartAfter, endText(g))
	}
	p("\n| variant | tierdb serve flags |\n|---|---|\n")
	if sc.BaselineOn() {
		p("| %s | `--qos off`, time-sensitive groups only |\n", BaselineVariant)
	}
	for _, v := range sc.Variants {
		env := ""
		if len(v.Env) > 0 {
			env = " (environment: `" + strings.Join(v.Env, " ") + "`)"
		}
		extra := ""
		if v.ReadPreference != nil {
			extra += "; reads: " + v.ReadPreference.String()
		}
		if v.BusyLoop {
			extra += "; a busy loop of another program on each server CPU"
		}
		for _, g := range sc.Groups {
			if n, ok := v.Clients[g.Name]; ok {
				extra += fmt.Sprintf("; %d clients in %s", n, g.Name)
			}
		}
		p("| %s | `%s`%s%s |\n", v.Name, strings.Join(v.ServeArgs(), " "), env, extra)
	}
	if len(sc.Postgres) > 0 {
		p("\nPostgreSQL settings: %v\n", sc.Postgres)
	}

	p("\n%s", MachineMarkdown(res.Machine, res.Postgres, res.Tierdb, res.Layout.Text))

	if len(res.Targets) > 0 {
		rows := make([]TargetRow, len(res.Targets))
		for i, t := range res.Targets {
			rows[i] = TargetRow{Name: t.Name, Variant: t.Variant, Measured: t.Measured, Limit: limitText(t), Pass: t.Pass, Missing: t.Missing}
		}
		p("%s", TargetsMarkdown(rows))
		p("%s", pairedText(res))
	}

	p("## Latency and throughput (medians across repetitions)\n\n")
	p("Ratios are against the reference variant (%s) and the idle baseline; lower is better for latency.\n\n", orDash(sum.Reference))
	p("| group | variant | ops | errors | mean | p50 | p99 | p99.9 | max | ops/s | p50 vs ref | p99.9 vs ref | mean vs ref | p99.9 vs idle |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range sc.Groups {
		for _, gs := range sum.Groups {
			if gs.Group != g.Name {
				continue
			}
			md := gs.Median
			p("| %s (%s) | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				g.Name, g.Tier, gs.Variant, md.Ops, md.Errors, fmtMicros(md.Mean), fmtMicros(md.P50), fmtMicros(md.P99),
				fmtMicros(md.P999), fmtMicros(md.Max), fmtRate(md.Throughput),
				ratioText(gs.VsReference, "p50"), ratioText(gs.VsReference, "p999"), ratioText(gs.VsReference, "mean"), ratioText(gs.VsBaseline, "p999"))
		}
	}
	p("\n")

	if r := replicationText(res); r != "" {
		p("%s", r)
	}

	if hasNoiseWindows(sum) {
		p("### Noise throughput around the time-sensitive phase\n\n")
		p("ops/s before (after the warm-up), during and after the time-sensitive groups' operations.\n\n")
		p("| group | variant | before | during | after | during vs before | after vs before |\n|---|---|--:|--:|--:|--:|--:|\n")
		for _, gs := range sum.Groups {
			md := gs.Median
			if gs.Role != RoleNoise || md.Before == 0 {
				continue
			}
			p("| %s (%s) | %s | %.0f | %.0f | %.0f | %s | %s |\n", gs.Group, gs.Tier, gs.Variant, md.Before, md.During, md.After,
				fmtChange(md.During/md.Before), fmtChange(md.After/md.Before))
		}
		p("\n")
	}

	p("%s", fairnessTable(sum))
	p("### Server side\n\n")
	p("CPU time of the tierdb process and of all PostgreSQL processes per operation (all groups), what tierdb's Go heap allocated per operation and how many collections it ran in a run, and how busy the server CPUs (%s) were, whoever used them; steal is time the hypervisor gave to other virtual machines.\n\n", cpuListText(res.Layout.ServerCPUs))
	p("| variant | all groups ops/s | tierdb CPU/op | PostgreSQL CPU/op | tierdb alloc/op | collections | server CPUs busy | of which other processes | steal | iowait | load generator CPU | load CPUs busy | run length |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, v := range sum.Variants {
		cut := ""
		if v.CutOff > 0 {
			cut = fmt.Sprintf(" (%d cut off)", v.CutOff)
		}
		p("| %s | %.0f | %.0f µs | %.0f µs | %.1f kB | %.0f | %.0f%% | %.0f%% | %.1f%% | %.1f%% | %.0f%% | %.0f%% | %.1f s%s |\n", v.Variant, v.Throughput, v.TierdbCPUPerOp, v.PostgresCPUPerOp, v.AllocPerOp/1000, v.GCs,
			v.BusyPct, v.OthersPct, v.StealPct, v.IOWaitPct, v.LoadGenCPUPct, v.LoadBusyPct, v.WallSeconds, cut)
	}
	p("\n")

	if d := diagnosticsText(res); d != "" {
		p("### Where the server side's time went\n\n%s\n", d)
	}

	if sc.Repeat > 1 {
		p("### Each repetition\n\n| rep | variant | group | ops/s | p50 | p99.9 | before / during / after |\n|--:|---|---|--:|--:|--:|---|\n")
		for _, r := range res.Runs {
			for _, g := range r.Groups {
				st := groupStats(r, g, sc)
				win := ""
				if st.Before > 0 {
					win = fmt.Sprintf("%.0f / %.0f / %.0f", st.Before, st.During, st.After)
				}
				p("| %d | %s | %s | %.0f | %s | %s | %s |\n", r.Rep, r.Variant, g.Name, st.Throughput, fmtMicros(st.P50), fmtMicros(st.P999), win)
			}
		}
		p("\n")
	}

	if q := qosTable(res); q != "" {
		p("### Priority channel\n\ntierdb's `qosStatus` at the end of each QoS-on run of repetition 1: requests admitted per tier, how many had to wait, and the wait.\n\n%s\n", q)
	}

	if len(plots) > 0 {
		p("## Plots\n\n")
		for _, pl := range plots {
			p("%s\n\n![%s](%s)\n\n", pl.Caption, pl.Name, pl.Name)
		}
	}
	p("Raw data: `results.json` (every run, histogram and sample); summary table: `summary.csv`; server logs: `logs/`.\n")
	return b.String()
}

func groupMixText(g Group) string {
	var t string
	if g.Kind == KindStaleness {
		t = "S workload: 1 writer stamping back to back, clients read the stamp"
		if g.WriteRate > 0 {
			t = fmt.Sprintf("S workload: 1 writer stamping %g/s, clients read the stamp", g.WriteRate)
		}
	} else {
		t = mixText(g.Mix)
	}
	if g.ReadPreference != nil {
		t += "; reads: " + g.ReadPreference.String()
	}
	return t
}

func mixText(m Mix) string {
	t := m.total()
	var parts []string
	for _, x := range []struct {
		name string
		v    float64
	}{{"read", m.Read}, {"update", m.Update}, {"insert", m.Insert}, {"scan", m.Scan}} {
		if x.v > 0 {
			parts = append(parts, fmt.Sprintf("%.0f%% %s", 100*x.v/t, x.name))
		}
	}
	return strings.Join(parts, ", ")
}

func modeText(g Group) string {
	if g.Mode == ModeRate {
		return fmt.Sprintf("%g ops/s per client", g.Rate)
	}
	return "closed loop"
}

func endText(g Group) string {
	switch {
	case g.Ops > 0:
		return fmt.Sprintf("%d ops per client", g.Ops)
	case g.Duration > 0:
		return fmt.Sprintf("after %s", g.Duration)
	}
	return fmt.Sprintf("%s after the others", g.AfterOthers)
}

func limitText(t TargetResult) string {
	switch t.kind() {
	case "minReduction":
		return fmt.Sprintf("≥ %.0f%% lower", 100*t.Limit)
	case "maxVsBaseline":
		return fmt.Sprintf("≤ %g× idle", t.Limit)
	case "within":
		return fmt.Sprintf("within ±%g%%", 100*t.Limit)
	case "maxNoiseDrop":
		return fmt.Sprintf("≤ %.0f%% drop", 100*t.Limit)
	case "minRecovery":
		return fmt.Sprintf("after ≥ %.0f%% of before", 100*t.Limit)
	case "minVsBest":
		return fmt.Sprintf("≥ %g× the better", t.Limit)
	case "maxViolations":
		return fmt.Sprintf("≤ %g violations", t.Limit)
	case "atMost":
		if slices.Contains(latencyMetrics, t.Metric) {
			return fmt.Sprintf("≤ %g ms", t.Limit)
		}
		return fmt.Sprintf("≤ %.0f%%", 100*t.Limit)
	}
	return ""
}

func ratioText(m map[string]float64, k string) string {
	if v, ok := m[k]; ok {
		return fmtChange(v)
	}
	return "–"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func cpuListText(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

func hasNoiseWindows(sum *Summary) bool {
	for _, g := range sum.Groups {
		if g.Role == RoleNoise && g.Median.Before > 0 {
			return true
		}
	}
	return false
}

// qosTable summarizes the qosStatus replies of repetition 1.
func qosTable(res *Results) string {
	var b strings.Builder
	for _, r := range res.Runs {
		if r.Rep != 1 || len(r.QoSStatus) == 0 {
			continue
		}
		var st struct {
			Tiers map[string]struct {
				Admitted   json.Number `json:"admitted"`
				Waited     json.Number `json:"waited"`
				WaitMicros struct {
					P50 json.Number `json:"p50"`
					P99 json.Number `json:"p99"`
					Max json.Number `json:"max"`
				} `json:"waitMicros"`
			} `json:"tiers"`
		}
		dec := json.NewDecoder(strings.NewReader(string(r.QoSStatus)))
		dec.UseNumber()
		if err := dec.Decode(&st); err != nil {
			continue
		}
		for _, tier := range []string{"high", "normal", "low"} {
			t, ok := st.Tiers[tier]
			if !ok || t.Admitted.String() == "0" || t.Admitted == "" {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("| variant | tier | admitted | waited | wait p50 | wait p99 | wait max |\n|---|---|--:|--:|--:|--:|--:|\n")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s µs | %s µs | %s µs |\n", r.Variant, tier, t.Admitted, t.Waited, t.WaitMicros.P50, t.WaitMicros.P99, t.WaitMicros.Max)
		}
	}
	return b.String()
}

// pairedText gives, for each "within" target over several repetitions,
// the variant/reference ratios of the same repetition: how large a
// difference the machine's run-to-run noise leaves undecided.
func pairedText(res *Results) string {
	var b strings.Builder
	for _, t := range res.Scenario.Targets {
		if t.kind() != "within" {
			continue
		}
		r := pairedRatios(res.Scenario, res.Runs, t)
		if len(r) < 3 {
			continue
		}
		mean, half := meanCI95(r)
		pct := func(ratio float64) string {
			return strings.Replace(fmt.Sprintf("%+.1f %%", 100*(ratio-1)), "-", "−", 1)
		}
		fmt.Fprintf(&b, "- %s, paired by repetition (%s over %s in the same repetition, %d pairs): median %s, mean %s ± %.1f %% (95 %% confidence), from %s to %s.\n",
			t.Name, t.Variant, res.Scenario.Reference, len(r), pct(Median(r)), pct(mean), 100*half, pct(slices.Min(r)), pct(slices.Max(r)))
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
