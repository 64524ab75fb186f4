package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median reordered its input")
			}
		}
	}
}

func TestSeriesRateWindows(t *testing.T) {
	// 100 ms buckets: 10 per bucket for 2 s, 1 per bucket for 1 s, 10 again.
	var series []int32
	for i := range 40 {
		n := int32(10)
		if i >= 20 && i < 30 {
			n = 1
		}
		series = append(series, n)
	}
	for _, c := range []struct {
		from, to, want float64
	}{
		{0, 2, 100},
		{2, 3, 10},
		{3, 4, 100},
		{1.95, 3.05, 10}, // partial buckets at the edges are left out
		{0.5, 0.55, 0},   // no whole bucket
		{3.5, 99, 100},   // clipped to the series
		{-1, 1, 100},     // and at its start
	} {
		if got := seriesRate(series, c.from, c.to); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("seriesRate(%v, %v) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// cannedRuns builds runs with known figures: a time-sensitive group whose
// latencies are lat×(1…100) µs, and a noise group with given rates before,
// during and after a time-sensitive phase from 2 s to 4 s.
func cannedRun(rep int, variant string, lat float64, before, during, after int32) RunResult {
	ts := GroupRun{Name: "ts", Tier: "high", Role: RoleTimeSensitive, Clients: 1, Latency: &Histogram{}, Start: 2, End: 4}
	for i := 1; i <= 100; i++ {
		ts.Latency.Record(time.Duration(lat*float64(i)) * time.Microsecond)
	}
	ts.Ops = 100
	ts.Series = make([]int32, 40)
	for i := 20; i < 40; i++ {
		ts.Series[i] = 5
	}
	ts.Samples = [][][2]int64{{{2_000_000, int64(lat)}, {3_000_000, int64(2 * lat)}}}
	noise := GroupRun{Name: "noise", Tier: "low", Role: RoleNoise, Clients: 4, Latency: &Histogram{}, Start: 0, End: 6}
	for i := range 60 {
		n := before
		switch {
		case i >= 20 && i < 40:
			n = during
		case i >= 40:
			n = after
		}
		noise.Series = append(noise.Series, n)
		noise.Ops += int64(n)
		noise.Latency.Record(time.Millisecond)
	}
	return RunResult{
		Rep: rep, Variant: variant, Args: []string{"--qos", "off"}, WallSeconds: 6, Groups: []GroupRun{ts, noise},
		TSStart: 2, TSEnd: 4,
		Server: ServerUsage{TierdbCPU: 1, PostgresCPU: 2, BusyPct: 90},
		Diagnostics: Diagnostics{
			Tierdb:     map[string]TierRequests{"high": {Count: 100, MeanUs: lat * 30}, "low": {Count: 900, MeanUs: 800}},
			Waits:      map[string]map[string]int{"high": {"CPU": 3, "IO:WALSync": 1}, "low": {"CPU": 10}},
			WaitRounds: 100, WALSyncs: 600, WALSyncMs: 120,
		},
	}
}

func cannedScenario(t *testing.T) *Scenario {
	t.Helper()
	s, err := ParseScenario(strings.NewReader(`
name: canned
records: 100
warmup: 0s
repeat: 3
groups:
  - {name: ts, clients: 1, tier: high, mix: {update: 1}, startAfter: 2s, ops: 100}
  - {name: noise, clients: 4, tier: low, mix: {read: 1}, afterOthers: 2s}
variants:
  - {name: "off", qos: "off"}
  - {name: "on", qos: "on"}
targets:
  - {name: p50 70% lower, variant: "on", group: ts, metric: p50, minReduction: 0.70}
  - {name: p99.9 90% lower, variant: "on", group: ts, metric: p999, minReduction: 0.90}
  - {name: near idle, variant: "on", group: ts, metric: p999, maxVsBaseline: 2}
  - {name: noise drop, variant: "on", group: noise, maxNoiseDrop: 0.35}
  - {name: noise back, variant: "on", group: noise, minRecovery: 0.9}
  - {name: same throughput, variant: "on", metric: throughput, within: 0.03}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cannedResults(t *testing.T) *Results {
	sc := cannedScenario(t)
	var runs []RunResult
	for rep := 1; rep <= 3; rep++ {
		// Repetition 2 is an outlier the medians must ignore.
		off, on := 1000.0, 200.0
		if rep == 2 {
			off, on = 5000, 4000
		}
		runs = append(runs,
			cannedRun(rep, BaselineVariant, 150, 0, 0, 0),
			cannedRun(rep, "off", off, 10, 10, 10),
			cannedRun(rep, "on", on, 10, 7, 10),
		)
	}
	// The baseline has no noise group.
	for i := range runs {
		if runs[i].Variant == BaselineVariant {
			runs[i].Groups = runs[i].Groups[:1]
		}
	}
	return &Results{
		Scenario: sc, Command: "tierdb bench canned", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Finished: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), Machine: Machine{NProc: 2, CPUModel: "Test CPU"},
		Layout: Layout{Mode: LayoutSplit, ServerCPUs: []int{1}, LoadCPUs: []int{0}, Text: "split"},
		Tierdb: "tierdb test", Postgres: "15", Runs: runs,
	}
}

func TestSummarizeMediansRatiosAndWindows(t *testing.T) {
	res := cannedResults(t)
	sum := Summarize(res.Scenario, res.Runs)
	if got := len(sum.Variants); got != 3 || sum.Variants[0].Variant != BaselineVariant {
		t.Fatalf("variants: %+v", sum.Variants)
	}
	off, ok1 := sum.Find("off", "ts")
	on, ok2 := sum.Find("on", "ts")
	if !ok1 || !ok2 {
		t.Fatal("missing groups")
	}
	if len(off.Reps) != 3 {
		t.Fatalf("%d repetitions", len(off.Reps))
	}
	// Latencies lat×1…lat×100 µs: the nearest-rank p50 is lat×50.
	if math.Abs(off.Median.P50-50_000) > 500 || math.Abs(on.Median.P50-10_000) > 100 {
		t.Errorf("median p50s: off %v, on %v", off.Median.P50, on.Median.P50)
	}
	if math.Abs(on.VsReference["p50"]-0.2) > 0.01 {
		t.Errorf("p50 on/off = %v, want 0.2", on.VsReference["p50"])
	}
	if math.Abs(on.VsBaseline["p999"]-200.0/150) > 0.02 {
		t.Errorf("p99.9 on/baseline = %v, want %v", on.VsBaseline["p999"], 200.0/150)
	}
	if _, ok := sum.Find(BaselineVariant, "noise"); ok {
		t.Error("the baseline should have no noise group")
	}
	noise, _ := sum.Find("on", "noise")
	// 10, 7 and 10 operations per 100 ms bucket.
	if noise.Median.Before != 100 || noise.Median.During != 70 || noise.Median.After != 100 {
		t.Errorf("windows: %v / %v / %v", noise.Median.Before, noise.Median.During, noise.Median.After)
	}
	if math.Abs(off.Median.Throughput-50) > 1e-9 {
		t.Errorf("ts throughput %v, want 100 ops over 2 s", off.Median.Throughput)
	}
}

func TestEvaluateTargets(t *testing.T) {
	res := cannedResults(t)
	sum := Summarize(res.Scenario, res.Runs)
	got := map[string]TargetResult{}
	for _, r := range Evaluate(res.Scenario, sum) {
		got[r.Name] = r
	}
	want := map[string]bool{
		"p50 70% lower":   true,  // −80%
		"p99.9 90% lower": false, // −80%
		"near idle":       true,  // 1.33×
		"noise drop":      true,  // −30%
		"noise back":      true,
		"same throughput": false, // the noise dips during the phase
	}
	for name, pass := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("target %q not evaluated", name)
			continue
		}
		if r.Missing != "" {
			t.Errorf("%s: missing data: %s", name, r.Missing)
		}
		if r.Pass != pass {
			t.Errorf("%s: pass = %v, want %v (%s)", name, r.Pass, pass, r.Measured)
		}
	}
	if r := got["noise drop"]; math.Abs(r.Value-0.3) > 1e-9 || r.Limit != 0.35 {
		t.Errorf("noise drop value %v limit %v", r.Value, r.Limit)
	}
	// Without the data a target is a MISS, never a PASS.
	empty := Evaluate(res.Scenario, Summarize(res.Scenario, nil))
	for _, r := range empty {
		if r.Pass || r.Missing == "" {
			t.Errorf("%s with no data: pass %v missing %q", r.Name, r.Pass, r.Missing)
		}
	}
}

func TestRecorderAndMerge(t *testing.T) {
	a, b := newRecorder(true, 1), newRecorder(false, 2)
	a.record(100*time.Millisecond, 101*time.Millisecond, nil)
	a.record(250*time.Millisecond, 253*time.Millisecond, nil)
	a.record(300*time.Millisecond, 310*time.Millisecond, errTest)
	b.record(50*time.Millisecond, 150*time.Millisecond, nil)
	g := mergeGroup(Group{Name: "g", Tier: "high", Role: RoleTimeSensitive}, 2, []*recorder{a, b})
	if g.Ops != 3 || g.Errors != 1 || g.FirstError != errTest.Error() {
		t.Errorf("ops %d errors %d first %q", g.Ops, g.Errors, g.FirstError)
	}
	if g.Start != 0.05 || math.Abs(g.End-0.31) > 1e-9 {
		t.Errorf("span %v–%v", g.Start, g.End)
	}
	// Answered at 101 ms and 150 ms (bucket 1), 253 ms (bucket 2).
	if len(g.Series) != 3 || g.Series[1] != 2 || g.Series[2] != 1 {
		t.Errorf("series %v", g.Series)
	}
	if len(g.Samples) != 1 || len(g.Samples[0]) != 2 || g.Samples[0][1] != [2]int64{250_000, 3000} {
		t.Errorf("samples %v", g.Samples)
	}
}

func TestRecorderCapsSamples(t *testing.T) {
	r := newRecorder(true, 9)
	n := SampleCap * 3
	for i := range n {
		at := time.Duration(i) * time.Microsecond
		r.record(at, at+time.Microsecond, nil)
	}
	if len(r.samples) != SampleCap {
		t.Fatalf("%d samples kept, cap %d", len(r.samples), SampleCap)
	}
	// A uniform subset: about a third of the kept samples come from each
	// third of the run.
	late := 0
	for _, s := range r.samples {
		if s[0] >= int64(2*SampleCap) {
			late++
		}
	}
	if late < SampleCap/4 || late > SampleCap*5/12 {
		t.Errorf("%d of %d samples from the last third of the run", late, SampleCap)
	}
	if r.hist.Count() != uint64(n) {
		t.Error("the histogram must count every operation")
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("boom")

func TestMeasureFromLeavesTheWarmUpOutOfThroughput(t *testing.T) {
	// 10 buckets per second (SeriesBucket 100 ms): 1 op per bucket for the
	// first 2 s, then 5 per bucket for 2 s.
	var series []int32
	for i := 0; i < 40; i++ {
		n := int32(1)
		if i >= 20 {
			n = 5
		}
		series = append(series, n)
	}
	g := GroupRun{Name: "g", Ops: 120, Start: 0, End: 4, Series: series}
	sc := &Scenario{}
	if got := groupStats(RunResult{}, g, sc).Throughput; got != 30 {
		t.Fatalf("whole-run throughput = %v, want 30", got)
	}
	sc.MeasureFrom = Duration(2e9)
	if got := groupStats(RunResult{}, g, sc).Throughput; got != 50 {
		t.Fatalf("throughput after the warm-up = %v, want 50", got)
	}
}

func TestPairedRatiosComparePerRepetition(t *testing.T) {
	res := cannedResults(t)
	// The noise runs faster under "on" in repetition 3 only; the
	// repetitions' own levels must not matter.
	for i, r := range res.Runs {
		if r.Variant == "on" && r.Rep == 3 {
			res.Runs[i] = cannedRun(3, "on", 200, 20, 14, 20)
		}
	}
	var target Target
	for _, tg := range res.Scenario.Targets {
		if tg.kind() == "within" {
			target = tg
		}
	}
	got := pairedRatios(res.Scenario, res.Runs, target)
	// All groups: ts 100 ops + noise (10×20 + d×20 + 10×20) ops over 6 s.
	total := func(during int) float64 { return float64(100+200+20*during+200) / 6 }
	faster := float64(100+400+20*14+400) / 6
	want := []float64{total(7) / total(10), total(7) / total(10), faster / total(10)}
	if len(got) != len(want) {
		t.Fatalf("ratios %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("ratios %v, want %v", got, want)
		}
	}
	if text := pairedText(res); !strings.Contains(text, "3 pairs") || !strings.Contains(text, "median −") {
		t.Fatalf("paired text: %q", text)
	}
}

func TestMeanCI95(t *testing.T) {
	mean, half := meanCI95([]float64{1, 2, 3, 4, 5})
	// Student's t for 4 degrees of freedom is 2.776; sd is √2.5.
	want := 2.776 * math.Sqrt(2.5) / math.Sqrt(5)
	if mean != 3 || math.Abs(half-want) > 1e-9 {
		t.Fatalf("meanCI95 = %v ± %v, want 3 ± %v", mean, half, want)
	}
	// Where the table ends, the expansion takes over smoothly.
	for df, want := range map[int]float64{2: 4.303, 30: 2.042, 31: 2.040, 60: 2.000, 120: 1.980} {
		if got := tQuantile975(df); math.Abs(got-want) > 0.002 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", df, got, want)
		}
	}
}

// physics = before − X·c_ts/c: 31 noise clients did 1000 ops/s before;
// the time-sensitive client does 100 ops/s at twice the noise's CPU per
// operation, so physics leaves 800 and 600 during is 0.75 of it. The
// noise's CPU per operation (100 µs) is what is left of the variant's
// (110 µs over 1000 time-sensitive and 9000 noise operations) once the
// time-sensitive ones are charged their 200 µs alone.
func TestMinVsPhysics(t *testing.T) {
	sc := &Scenario{
		Groups:   []Group{{Name: "ts", Role: RoleTimeSensitive}, {Name: "noise", Role: RoleNoise}},
		Variants: []Variant{{Name: "on"}},
	}
	sum := &Summary{
		Groups: []GroupSummary{
			{Variant: "on", Group: "ts", Median: Stats{Throughput: 100, Ops: 1000}},
			{Variant: "on", Group: "noise", Median: Stats{Before: 1000, During: 600, Ops: 9000}},
		},
		Variants: []VariantSummary{
			{Variant: BaselineVariant, TierdbCPUPerOp: 60, PostgresCPUPerOp: 140},
			{Variant: "on", TierdbCPUPerOp: 40, PostgresCPUPerOp: 70},
		},
	}
	half := 0.5
	r := evaluate(sc, Target{Variant: "on", Group: "noise", MinVsPhysics: &half}, sum)
	if r.Missing != "" || math.Abs(r.Value-0.75) > 1e-9 || !r.Pass {
		t.Fatalf("got %+v, want 0.75 and a pass", r)
	}
	sum.Groups[1].Median.During = 300
	if r := evaluate(sc, Target{Variant: "on", Group: "noise", MinVsPhysics: &half}, sum); r.Pass {
		t.Fatalf("300 of 800 passed: %+v", r)
	}
	// A phase three times as long against the run: the variant's CPU per
	// operation rises toward the time-sensitive client's (130 µs over 3000
	// and 7000 operations), the noise's stays 100 µs, and so does physics.
	sum.Groups[1].Median.During = 600
	sum.Groups[0].Median.Ops, sum.Groups[1].Median.Ops = 3000, 7000
	sum.Variants[1].PostgresCPUPerOp = 90
	if r := evaluate(sc, Target{Variant: "on", Group: "noise", MinVsPhysics: &half}, sum); math.Abs(r.Value-0.75) > 1e-9 {
		t.Fatalf("a longer phase moved the figure: %+v, want 0.75", r)
	}
}
