package bench

import (
	"image/color"
	"math"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestTimelinesShareAxes(t *testing.T) {
	groups := []Group{{Name: "ts", Tier: "high"}}
	// off is slow and late, on fast and early: their axes must still match.
	runs := []RunResult{
		{Variant: "off", Groups: []GroupRun{{Name: "ts", Samples: [][][2]int64{{{6_000_000, 80_000}, {9_000_000, 2_000}}}}}},
		{Variant: "on", Groups: []GroupRun{{Name: "ts", Samples: [][][2]int64{{{1_000_000, 300}, {2_000_000, 900}}}}}},
	}
	ax := timelineAxesOf(runs)
	var ranges [][4]float64
	for _, r := range runs {
		p, err := timelinePlot(r, groups, ax)
		if err != nil || p == nil {
			t.Fatalf("%s: %v, %v", r.Variant, p, err)
		}
		ranges = append(ranges, [4]float64{p.X.Min, p.X.Max, p.Y.Min, p.Y.Max})
		if err := p.Save(plotW, plotH, filepath.Join(t.TempDir(), "t.png")); err != nil {
			t.Fatal(err)
		}
	}
	if ranges[0] != ranges[1] {
		t.Errorf("off and on have different axes: %v vs %v", ranges[0], ranges[1])
	}
	if r := ranges[0]; r[0] != 0 || r[1] < 9 || r[2] > 0.3 || r[3] < 80 {
		t.Errorf("axes %v do not span both runs' samples (0.3…80 ms, up to 9 s)", r)
	}
}

func TestPercentileBarsOnALogScale(t *testing.T) {
	sum := &Summary{Groups: []GroupSummary{
		{Variant: "off", Group: "ts", Median: Stats{Mean: 900, P50: 100, P99: 20_000, P999: 100_000}},
		{Variant: "on", Group: "ts", Median: Stats{Mean: 200, P50: 90, P99: 1_000, P999: 4_000}},
	}}
	p, err := percentilePlot(sum, []string{"off", "on"}, Group{Name: "ts", Tier: "high"})
	if err != nil || p == nil {
		t.Fatalf("%v, %v", p, err)
	}
	if _, ok := p.Y.Scale.(barLogScale); !ok {
		t.Fatalf("Y scale %T, want a log scale", p.Y.Scale)
	}
	// p50 (0.09 ms) must be a bar, not a sliver under p99.9 (100 ms): on a
	// log axis it reaches a good part of the way up.
	if p.Y.Min <= 0 || p.Y.Min >= 0.09 || p.Y.Max < 100 {
		t.Errorf("Y from %v to %v ms", p.Y.Min, p.Y.Max)
	}
	if h := p.Y.Norm(0.09); h < 0.1 {
		t.Errorf("the p50 bar reaches %.2f of the axis", h)
	}
	// Bars start at 0, which a plain log scale refuses.
	if got := p.Y.Norm(0); got != 0 {
		t.Errorf("0 maps to %v, want the axis' bottom", got)
	}
	if err := p.Save(plotW, plotH, filepath.Join(t.TempDir(), "p.png")); err != nil {
		t.Fatal(err)
	}
}

func TestPhaseMarksOfCoincidingPhasesStayApart(t *testing.T) {
	off, on := color.RGBA{R: 255, A: 255}, color.RGBA{B: 255, A: 255}
	marks, ymax, err := phaseMarks([]phase{{6, 12, off}, {6, 12, on}}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Per phase: two dashed ends and a bracket.
	if len(marks) != 6 {
		t.Fatalf("%d marks, want 6", len(marks))
	}
	level := func(l *plotter.Line) float64 {
		y := 0.0
		for _, pt := range l.XYs {
			y = max(y, pt.Y)
		}
		return y
	}
	bOff, bOn := marks[2], marks[5]
	if bOff.LineStyle.Color != off || bOn.LineStyle.Color != on {
		t.Fatalf("brackets in %v and %v", bOff.LineStyle.Color, bOn.LineStyle.Color)
	}
	if level(bOff) == level(bOn) {
		t.Errorf("both brackets at %v: one hides the other", level(bOff))
	}
	for _, b := range []*plotter.Line{bOff, bOn} {
		if lv := level(b); lv <= 1000 || lv >= ymax {
			t.Errorf("bracket at %v, want above the lines (1000) and under the axis' top (%v)", lv, ymax)
		}
	}
	if d0, d1 := marks[0].LineStyle.Dashes, marks[3].LineStyle.Dashes; len(d0) == 2 && len(d1) == 2 && math.Abs(float64(d0[1]-d1[1])) < 1 {
		t.Errorf("coinciding end markers share the dash pattern %v", d0)
	}
}
