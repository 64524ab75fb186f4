package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// replicationText is the report's replication section; "" for a scenario
// without replicas.
func replicationText(res *Results) string {
	sc, sum := res.Scenario, res.Summary
	if sc.Replicas == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Replication\n\n")
	p("A primary and %d hot standbys; %s. Reads served per node are tierdb's own counts (`replSetGetStatus` readsServed, polled by the harness), not what the clients asked for. Periods are %s.\n\n",
		sc.Replicas, res.Layout.Text, sc.Period)

	p("| variant | group | read preference | ops/s | p80 | p99.9 | reads on standbys | balance fraction at the end | balancer decisions |\n|---|---|---|--:|--:|--:|--:|--:|---|\n")
	for _, gs := range sum.Groups {
		g, _ := sc.Group(gs.Group)
		rp := "primary (driver default)"
		var run RunResult
		if r, ok := firstRun(res.Runs, gs.Variant); ok {
			run = r
			for _, gr := range r.Groups {
				if gr.Name == gs.Group {
					rp = gr.ReadPreference.String()
				}
			}
		}
		if g.Kind == KindStaleness {
			rp += " (S readers)"
		}
		md := gs.Median
		share := "–"
		if md.StandbyShare >= 0 && len(run.Repl) > 0 {
			share = fmt.Sprintf("%.0f%%", 100*md.StandbyShare)
		}
		frac, decisions := balancerText(run)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", gs.Variant, gs.Group, rp, fmtRate(md.Throughput), fmtMicros(md.P80), fmtMicros(md.P999), share, frac, decisions)
	}
	p("\n")

	var stale []GroupSummary
	for _, gs := range sum.Groups {
		if g, _ := sc.Group(gs.Group); g.Kind == KindStaleness {
			stale = append(stale, gs)
		}
	}
	if len(stale) > 0 {
		p("### Client-observed staleness (S workload)\n\n")
		p("One writer per S group stamps a counter into one document (w:1); the group's readers read it with its read preference. A read sent at r that saw stamp s is stale by r − (acknowledgement of write s+1) when that write was acknowledged before r, else 0. Medians across repetitions; violations are reads over the bound, worst repetition.\n\n")
		p("| variant | group | bound | reads | stale reads | staleness p50 | p99 | max | violations | writes | write p50 | reads older than the client's previous |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, gs := range stale {
			worst := 0.0
			for _, r := range gs.Reps {
				worst = max(worst, r.Violations)
			}
			bound, reads, writes, wp50, regress := "–", int64(0), int64(0), "–", int64(0)
			for _, r := range res.Runs {
				if r.Variant != gs.Variant {
					continue
				}
				for _, gr := range r.Groups {
					if gr.Name != gs.Group || gr.Staleness == nil {
						continue
					}
					st := gr.Staleness
					switch {
					case st.BoundMS > 0:
						bound = fmt.Sprintf("%d ms", st.BoundMS)
					case st.BoundMS == 0:
						bound = "0 (primary)"
					default:
						bound = "none"
					}
					reads += st.Reads
					writes += st.Writes
					regress += st.Regressions
					if r.Rep == 1 && st.WriteLatency != nil && st.WriteLatency.Count() > 0 {
						wp50 = fmtMicros(micros(st.WriteLatency.Quantile(0.5)))
					}
				}
			}
			md := gs.Median
			p("| %s | %s | %s | %d | %.0f | %s | %s | %s | **%.0f** | %d | %s | %d |\n", gs.Variant, gs.Group, bound, reads, md.StaleReads,
				fmtMicros(md.StaleP50), fmtMicros(md.StaleP99), fmtMicros(md.StaleMax), worst, writes, wp50, regress)
		}
		p("\n(reads, writes and regressions summed over the repetitions.)\n\n")
	}

	p("### Per period (repetition 1)\n\n")
	p("Read throughput and p80 read latency of the YCSB groups (S groups left out), the share of all reads the standbys served, the balance fraction at the period's end and the largest standby staleness tierdb polled.\n\n")
	p("| variant | period | reads/s | read p80 | on standbys | fraction | staleness (tierdb) |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, v := range VariantOrder(sc, res.Runs) {
		run, ok := firstRun(res.Runs, v)
		if !ok {
			continue
		}
		for _, ps := range run.Periods {
			share := "–"
			if ps.StandbyShare >= 0 {
				share = fmt.Sprintf("%.0f%%", 100*ps.StandbyShare)
			}
			stale := "unknown"
			if ps.StalenessMS >= 0 {
				stale = fmt.Sprintf("%d ms", ps.StalenessMS)
			}
			p("| %s | %.1f–%.1f s | %.0f | %s | %s | %.0f%% | %s |\n", v, ps.Start, ps.End, ps.ReadsPerSec, fmtMicros(ps.ReadP80Us), share, 100*ps.Fraction, stale)
		}
	}
	p("\n")
	return b.String()
}

// balancerText is the balance fraction at a run's end and its decisions
// by reason, from the last replSetGetStatus.
func balancerText(run RunResult) (fraction, decisions string) {
	if len(run.ReplStatus) == 0 {
		return "–", "–"
	}
	var st struct {
		ReadBalancer struct {
			Fraction  float64 `json:"fraction"`
			Decisions []struct {
				Reason string `json:"reason"`
			} `json:"decisions"`
		} `json:"readBalancer"`
	}
	if err := json.Unmarshal(run.ReplStatus, &st); err != nil {
		return "–", "–"
	}
	counts := map[string]int{}
	var order []string
	for _, d := range st.ReadBalancer.Decisions {
		if counts[d.Reason] == 0 {
			order = append(order, d.Reason)
		}
		counts[d.Reason]++
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s %d", r, counts[r]))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("%.0f%%", 100*st.ReadBalancer.Fraction), strings.Join(parts, ", ")
}

// periodPlot draws one per-period quantity over time, one line per
// variant (repetition 1): the panels of seed 001's Fig. 2.
func periodPlot(res *Results, title, ylabel string, value func(PeriodStats) (float64, bool)) (*plot.Plot, error) {
	p := newPlot(title, "time since the run's start (s)", ylabel)
	lines := 0
	top := 0.0
	for vi, v := range VariantOrder(res.Scenario, res.Runs) {
		run, ok := firstRun(res.Runs, v)
		if !ok {
			continue
		}
		var pts plotter.XYs
		for _, ps := range run.Periods {
			if y, ok := value(ps); ok {
				pts = append(pts, plotter.XY{X: (ps.Start + ps.End) / 2, Y: y})
				top = max(top, y)
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		col := variantColor(vi, v)
		l.LineStyle.Color, l.LineStyle.Width = col, vg.Points(1.5)
		sc.GlyphStyle.Color = col
		p.Add(l, sc)
		p.Legend.Add(v, l)
		lines++
	}
	if lines == 0 {
		return nil, nil
	}
	p.Y.Min = 0
	p.Y.Max = max(top*1.3, 1e-9)
	return p, nil
}

// replPlots are the Fig. 2-style plots of a replicated scenario.
func replPlots(res *Results, add func(name, caption string, p *plot.Plot, err error) error) error {
	if res.Scenario.Replicas == 0 {
		return nil
	}
	per := res.Scenario.Period.String()
	p, err := periodPlot(res, "Read throughput per period", "reads per second", func(ps PeriodStats) (float64, bool) { return ps.ReadsPerSec, ps.ReadsPerSec > 0 })
	if err := add("repl-throughput.png", "Read throughput of the YCSB groups per "+per+" period, repetition 1 (cf. seed 001 Fig. 2a).", p, err); err != nil {
		return err
	}
	p, err = periodPlot(res, "p80 read latency per period", "p80 latency (ms)", func(ps PeriodStats) (float64, bool) { return ps.ReadP80Us / 1e3, ps.ReadP80Us > 0 })
	if err := add("repl-p80.png", "p80 end-to-end read latency per "+per+" period, repetition 1 (cf. Fig. 2b).", p, err); err != nil {
		return err
	}
	p, err = periodPlot(res, "Reads served by standbys", "% of reads on standbys", func(ps PeriodStats) (float64, bool) { return 100 * ps.StandbyShare, ps.StandbyShare >= 0 })
	if err := add("repl-standbys.png", "Share of reads tierdb served from standbys per "+per+" period (readsServed deltas), repetition 1 (cf. Fig. 2c).", p, err); err != nil {
		return err
	}
	p, err = periodPlot(res, "Balance fraction", "balance fraction (%)", func(ps PeriodStats) (float64, bool) { return 100 * ps.Fraction, true })
	return add("repl-fraction.png", "tierdb's balance fraction at the end of each period, repetition 1.", p, err)
}
