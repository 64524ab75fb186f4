package bench

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotFile is a written plot and what it shows.
type plotFile struct {
	Name    string
	Caption string
}

const (
	plotW = 16 * vg.Centimeter
	plotH = 9 * vg.Centimeter
)

// writePlots draws every plot the results allow into dir.
func writePlots(dir string, res *Results) ([]plotFile, error) {
	sc := res.Scenario
	order := VariantOrder(sc, res.Runs)
	var out []plotFile
	add := func(name, caption string, p *plot.Plot, err error) error {
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		if p == nil {
			return nil
		}
		if err := p.Save(plotW, plotH, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		out = append(out, plotFile{name, caption})
		return nil
	}
	var firsts []RunResult
	for _, v := range order {
		if run, ok := firstRun(res.Runs, v); ok {
			firsts = append(firsts, run)
		}
	}
	ax := timelineAxesOf(firsts)
	for _, run := range firsts {
		v := run.Variant
		p, err := timelinePlot(run, sc.Groups, ax)
		caption := fmt.Sprintf("Response time of each operation over time, %s, repetition 1 (cf. the paper's Fig. 4 top); every variant's timeline has the same axes.", v)
		if err := add("timeline-"+v+".png", caption, p, err); err != nil {
			return out, err
		}
	}
	for _, g := range sc.Groups {
		p, err := cdfPlot(res, order, g)
		caption := fmt.Sprintf("Latency CDF of group %s (tier %s), all repetitions (cf. Fig. 4 bottom).", g.Name, g.Tier)
		if err := add("cdf-"+g.Name+".png", caption, p, err); err != nil {
			return out, err
		}
	}
	for _, g := range sc.Groups {
		if g.Role != RoleTimeSensitive {
			continue
		}
		p, err := percentilePlot(res.Summary, order, g)
		caption := fmt.Sprintf("Mean, p50, p99 and p99.9 of group %s per variant, medians of the repetitions, on a log scale (cf. Fig. 5 left).", g.Name)
		if err := add("percentiles-"+g.Name+".png", caption, p, err); err != nil {
			return out, err
		}
	}
	for _, g := range sc.Groups {
		if g.Role != RoleNoise {
			continue
		}
		p, err := throughputPlot(res, order, g)
		caption := fmt.Sprintf("Throughput of group %s per second, repetition 1; the bar above the lines and the dashed lines in a variant's colour bound its time-sensitive phase (cf. Fig. 5/7 right).", g.Name)
		if err := add("throughput-"+g.Name+".png", caption, p, err); err != nil {
			return out, err
		}
	}
	if err := replPlots(res, add); err != nil {
		return out, err
	}
	return out, nil
}

func firstRun(runs []RunResult, variant string) (RunResult, bool) {
	for _, r := range runs {
		if r.Variant == variant {
			return r, true
		}
	}
	return RunResult{}, false
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// logY switches the Y axis to a log scale; every value must be > 0.
func logY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
}

// logRange sets a log axis to span lo…hi. gonum widens an empty range
// (all values equal) by ±1, which can reach 0, where a log scale panics.
func logRange(a *plot.Axis, lo, hi float64) {
	if lo >= hi {
		lo, hi = lo/2, hi*2
	}
	a.Min, a.Max = lo, hi
}

// timelineAxes are the ranges every variant's timeline shares, so that
// QoS off and on compare at a glance: seconds from the run's start, and
// response times in ms (log).
type timelineAxes struct {
	xMax, yLo, yHi float64
}

// timelineAxesOf spans the samples of all runs.
func timelineAxesOf(runs []RunResult) timelineAxes {
	ax := timelineAxes{yLo: math.Inf(1), yHi: math.Inf(-1)}
	for _, run := range runs {
		for _, g := range run.Groups {
			for _, client := range g.Samples {
				for _, s := range client {
					x, y := sampleXY(s)
					ax.xMax = max(ax.xMax, x)
					ax.yLo, ax.yHi = min(ax.yLo, y), max(ax.yHi, y)
				}
			}
		}
	}
	return ax
}

// sampleXY is a sample's place on a timeline: seconds, and ms (at least
// 1 µs, for the log scale).
func sampleXY(s [2]int64) (x, y float64) {
	return float64(s[0]) / 1e6, max(float64(s[1]), 1) / 1e3
}

// timelinePlot: one point per sampled operation, colored by group (the
// same colour for a group in every variant), on the shared axes ax.
func timelinePlot(run RunResult, groups []Group, ax timelineAxes) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Response times over time: %s", run.Variant), "time since the run's start (s)", "response time (ms, log)")
	logY(p)
	n := 0
	for _, g := range run.Groups {
		var pts plotter.XYs
		for _, client := range g.Samples {
			for _, s := range client {
				x, y := sampleXY(s)
				pts = append(pts, plotter.XY{X: x, Y: y})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = plotutil.Color(max(slices.IndexFunc(groups, func(sg Group) bool { return sg.Name == g.Name }), 0))
		sc.GlyphStyle.Radius = vg.Points(0.8)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%s)", g.Name, g.Tier), sc)
		n += len(pts)
	}
	if n == 0 {
		return nil, nil
	}
	// The top decade's upper half stays free for the legend.
	logRange(&p.Y, ax.yLo, ax.yHi*2)
	p.X.Min, p.X.Max = 0, ax.xMax*1.02
	return p, nil
}

// cdfPlot: one line per variant from the group's merged histograms.
func cdfPlot(res *Results, order []string, g Group) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Latency CDF: %s (%s)", g.Name, g.Tier), "response time (ms, log)", "fraction of operations")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	lines := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for vi, v := range order {
		merged := &Histogram{}
		for _, r := range res.Runs {
			if r.Variant != v {
				continue
			}
			for _, gr := range r.Groups {
				if gr.Name == g.Name {
					merged.Merge(gr.Latency)
				}
			}
		}
		if merged.Count() == 0 {
			continue
		}
		var pts plotter.XYs
		for _, c := range merged.CDF() {
			x := max(micros(c.Latency), 1) / 1e3
			lo, hi = min(lo, x), max(hi, x)
			pts = append(pts, plotter.XY{X: x, Y: c.Fraction})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle.Color = variantColor(vi, v)
		l.LineStyle.Width = vg.Points(1.5)
		l.LineStyle.Dashes = plotutil.Dashes(vi)
		p.Add(l)
		p.Legend.Add(v, l)
		lines++
	}
	if lines == 0 {
		return nil, nil
	}
	logRange(&p.X, lo, hi)
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.YOffs = vg.Centimeter
	return p, nil
}

// percentilePlot: grouped bars (mean, p50, p99, p99.9) per variant.
func percentilePlot(sum *Summary, order []string, g Group) (*plot.Plot, error) {
	metrics := []struct{ name, label string }{{"mean", "mean"}, {"p50", "p50"}, {"p99", "p99"}, {"p999", "p99.9"}}
	var names []string
	var rows []Stats
	for _, v := range order {
		if gs, ok := sum.Find(v, g.Name); ok {
			names = append(names, v)
			rows = append(rows, gs.Median)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	// Log scale: p50 stays visible next to a p99.9 many times larger.
	p := newPlot(fmt.Sprintf("Response time percentiles: %s (%s)", g.Name, g.Tier), "", "response time (ms, log)")
	p.Y.Scale = barLogScale{}
	p.Y.Tick.Marker = logTicks{}
	w := vg.Points(12)
	for mi, m := range metrics {
		vals := make(plotter.Values, len(rows))
		for i, r := range rows {
			vals[i] = r.metric(m.name) / 1e3
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(mi)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(mi)-float64(len(metrics)-1)/2)
		p.Add(b)
		p.Legend.Add(m.label, b)
	}
	p.NominalX(names...)
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		for _, m := range metrics {
			if v := r.metric(m.name) / 1e3; v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi == 0 {
		return nil, nil
	}
	// The smallest bar stays a bar (0.6 decade high); a decade above the
	// largest for the legend.
	p.Y.Min, p.Y.Max = lo/4, hi*10
	return p, nil
}

// barLogScale is a log scale that puts values at or below the axis'
// minimum on it: a bar chart's bars start at 0, where plot.LogScale
// panics.
type barLogScale struct{}

func (barLogScale) Normalize(lo, hi, x float64) float64 {
	return plot.LogScale{}.Normalize(lo, hi, max(x, lo))
}

// throughputPlot: ops/s per second over time, one line per variant, with
// the time-sensitive phase marked.
func throughputPlot(res *Results, order []string, g Group) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Throughput over time: %s (%s)", g.Name, g.Tier), "time since the run's start (s)", "operations per second")
	// About 60 points per line: per second for a minute-long run, finer
	// for shorter ones.
	longest := 0
	for _, r := range res.Runs {
		for _, gr := range r.Groups {
			longest = max(longest, len(gr.Series))
		}
	}
	perPoint := min(max(longest/60, 1), int(time.Second/SeriesBucket))
	top := 0.0
	lines := 0
	var phases []phase
	for vi, v := range order {
		run, ok := firstRun(res.Runs, v)
		if !ok {
			continue
		}
		for _, gr := range run.Groups {
			if gr.Name != g.Name || len(gr.Series) == 0 {
				continue
			}
			var pts plotter.XYs
			for i := 0; i < len(gr.Series); i += perPoint {
				var n int32
				end := min(i+perPoint, len(gr.Series))
				for _, c := range gr.Series[i:end] {
					n += c
				}
				secs := float64(end-i) * SeriesBucket.Seconds()
				pts = append(pts, plotter.XY{X: float64(i)*SeriesBucket.Seconds() + secs/2, Y: float64(n) / secs})
			}
			if len(pts) > 2 {
				// The last point covers the group's end: part of it idle.
				pts = pts[:len(pts)-1]
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			col := variantColor(vi, v)
			l.LineStyle.Color = col
			l.LineStyle.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(v, l)
			lines++
			for _, pt := range pts {
				top = max(top, pt.Y)
			}
			if run.TSEnd > run.TSStart {
				phases = append(phases, phase{run.TSStart, run.TSEnd, col})
			}
		}
	}
	if lines == 0 {
		return nil, nil
	}
	marks, ymax, err := phaseMarks(phases, top)
	if err != nil {
		return nil, err
	}
	for _, m := range marks {
		p.Add(m)
	}
	p.Y.Min, p.Y.Max = 0, ymax
	// The legend goes top left, where the noise runs alone before the
	// phase, clear of the brackets.
	p.Legend.Left = true
	return p, nil
}

// phase is a variant's time-sensitive phase in a throughput plot, in
// seconds from the run's start.
type phase struct {
	start, end float64
	col        color.Color
}

// phaseMarks draws each phase in its variant's colour, above lines that
// reach top: a bracket on a level of its own, so that phases that start
// and end together (QoS off and on usually do) stay apart, and dashed
// lines down to 0 at its ends, each variant's with a dash pattern of its
// own so that coinciding ones show both colours. ymax is the axis' top
// that shows them all.
func phaseMarks(phases []phase, top float64) (marks []*plotter.Line, ymax float64, err error) {
	level := func(i int) float64 { return top * (1.06 + 0.06*float64(i)) }
	for i, ph := range phases {
		y := level(i)
		for _, x := range []float64{ph.start, ph.end} {
			m, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: y}})
			if err != nil {
				return nil, 0, err
			}
			m.LineStyle.Color = ph.col
			m.LineStyle.Width = vg.Points(0.8)
			m.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2 + 3*float64(i))}
			marks = append(marks, m)
		}
		br, err := plotter.NewLine(plotter.XYs{{X: ph.start, Y: y - top*0.02}, {X: ph.start, Y: y}, {X: ph.end, Y: y}, {X: ph.end, Y: y - top*0.02}})
		if err != nil {
			return nil, 0, err
		}
		br.LineStyle.Color = ph.col
		br.LineStyle.Width = vg.Points(2)
		marks = append(marks, br)
	}
	return marks, level(len(phases)) + top*0.04, nil
}

// variantColor keeps a variant's color the same in every plot; the
// baseline is always grey.
func variantColor(i int, name string) color.Color {
	if name == BaselineVariant {
		return color.Gray{Y: 0x80}
	}
	return plotutil.Color(i)
}
