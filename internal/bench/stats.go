package bench

import (
	"math"
	"slices"
)

// Stats are one group's figures in one run, or their medians across
// repetitions. Latencies are in microseconds, throughputs in ops/s.
type Stats struct {
	Ops        float64 `json:"ops"`
	Errors     float64 `json:"errors"`
	Mean       float64 `json:"meanUs"`
	P50        float64 `json:"p50Us"`
	P99        float64 `json:"p99Us"`
	P999       float64 `json:"p999Us"`
	Max        float64 `json:"maxUs"`
	Throughput float64 `json:"opsPerSec"`
	// Before, During and After are a noise group's throughput before,
	// during and after the time-sensitive phase (0: no such window).
	Before float64 `json:"beforeOpsPerSec,omitempty"`
	During float64 `json:"duringOpsPerSec,omitempty"`
	After  float64 `json:"afterOpsPerSec,omitempty"`
	// An S group's client-observed staleness (µs) and violations of its
	// bound; a replicated run's share of reads served by standbys.
	StaleP50     float64 `json:"staleP50Us,omitempty"`
	StaleP99     float64 `json:"staleP99Us,omitempty"`
	StaleMax     float64 `json:"staleMaxUs,omitempty"`
	StaleReads   float64 `json:"staleReads,omitempty"`
	Violations   float64 `json:"violations,omitempty"`
	StandbyShare float64 `json:"standbyShare,omitempty"`
	P80          float64 `json:"p80Us,omitempty"`
}

func (s Stats) metric(name string) float64 {
	switch name {
	case "mean":
		return s.Mean
	case "p50":
		return s.P50
	case "p99":
		return s.P99
	case "p999":
		return s.P999
	case "max":
		return s.Max
	case "throughput":
		return s.Throughput
	case "before":
		return s.Before
	case "during":
		return s.During
	}
	return math.NaN()
}

// GroupSummary is one group under one variant across repetitions.
type GroupSummary struct {
	Variant string  `json:"variant"`
	Group   string  `json:"group"`
	Tier    string  `json:"tier"`
	Role    string  `json:"role"`
	Reps    []Stats `json:"reps"`
	Median  Stats   `json:"median"`
	// VsReference is median/median of the reference variant per metric
	// (mean, p50, p99, p999, max, throughput); VsBaseline likewise against
	// the idle baseline (time-sensitive groups only).
	VsReference map[string]float64 `json:"vsReference,omitempty"`
	VsBaseline  map[string]float64 `json:"vsBaseline,omitempty"`
}

// VariantSummary is the whole server under one variant: medians across
// repetitions.
type VariantSummary struct {
	Variant string `json:"variant"`
	// Throughput is all groups' operations over the run's span.
	Throughput float64 `json:"opsPerSec"`
	// TierdbCPUPerOp and PostgresCPUPerOp are CPU µs per operation.
	TierdbCPUPerOp   float64 `json:"tierdbCPUUsPerOp"`
	PostgresCPUPerOp float64 `json:"postgresCPUUsPerOp"`
	// AllocPerOp is tierdb's heap allocation in bytes per operation, GCs
	// its collections per run.
	AllocPerOp    float64 `json:"tierdbAllocBytesPerOp"`
	GCs           float64 `json:"tierdbGCs"`
	BusyPct       float64 `json:"serverBusyPct"`
	OthersPct     float64 `json:"serverOthersPct"`
	LoadGenCPUPct float64 `json:"loadGenCPUPct"`
	LoadBusyPct   float64 `json:"loadBusyPct"`
	StealPct      float64 `json:"serverStealPct"`
	IOWaitPct     float64 `json:"serverIOWaitPct"`
	WallSeconds   float64 `json:"wallSeconds"`
	CutOff        int     `json:"cutOffRuns,omitempty"`
	// Fairness are the users' figures (per-user groups only).
	Fairness *Fairness `json:"fairness,omitempty"`
}

// Summary is the report's content: per group and variant, and per variant.
type Summary struct {
	Reference string           `json:"reference,omitempty"`
	Groups    []GroupSummary   `json:"groups"`
	Variants  []VariantSummary `json:"variants"`
	// TotalThroughput maps a variant to VariantSummary.Throughput, for the
	// targets on all groups together.
	TotalThroughput map[string]float64 `json:"-"`
}

// variant returns the summary of the variant.
func (s *Summary) variant(name string) (VariantSummary, bool) {
	for _, v := range s.Variants {
		if v.Variant == name {
			return v, true
		}
	}
	return VariantSummary{}, false
}

// Find returns the summary of group under variant.
func (s *Summary) Find(variant, group string) (GroupSummary, bool) {
	for _, g := range s.Groups {
		if g.Variant == variant && g.Group == group {
			return g, true
		}
	}
	return GroupSummary{}, false
}

// VariantOrder is the order variants appear in: the baseline first (when
// measured), then the scenario's.
func VariantOrder(sc *Scenario, runs []RunResult) []string {
	var out []string
	if slices.ContainsFunc(runs, func(r RunResult) bool { return r.Variant == BaselineVariant }) {
		out = append(out, BaselineVariant)
	}
	for _, v := range sc.Variants {
		if slices.ContainsFunc(runs, func(r RunResult) bool { return r.Variant == v.Name }) {
			out = append(out, v.Name)
		}
	}
	return out
}

// Summarize computes the medians across repetitions and the ratios.
func Summarize(sc *Scenario, runs []RunResult) *Summary {
	sum := &Summary{Reference: sc.Reference, TotalThroughput: map[string]float64{}}
	for _, variant := range VariantOrder(sc, runs) {
		var vr []RunResult
		for _, r := range runs {
			if r.Variant == variant {
				vr = append(vr, r)
			}
		}
		sum.Variants = append(sum.Variants, summarizeVariant(variant, vr))
		sum.TotalThroughput[variant] = sum.Variants[len(sum.Variants)-1].Throughput
		for _, g := range sc.Groups {
			gs := GroupSummary{Variant: variant, Group: g.Name, Tier: g.Tier, Role: g.Role}
			for _, r := range vr {
				for _, gr := range r.Groups {
					if gr.Name == g.Name {
						gs.Reps = append(gs.Reps, groupStats(r, gr, sc))
					}
				}
			}
			if len(gs.Reps) == 0 {
				continue // the baseline leaves out the noise groups
			}
			gs.Median = medianStats(gs.Reps)
			sum.Groups = append(sum.Groups, gs)
		}
	}
	for i := range sum.Groups {
		g := &sum.Groups[i]
		if ref, ok := sum.Find(sc.Reference, g.Group); ok && g.Variant != sc.Reference && g.Variant != BaselineVariant {
			g.VsReference = ratios(g.Median, ref.Median)
		}
		if base, ok := sum.Find(BaselineVariant, g.Group); ok && g.Variant != BaselineVariant {
			g.VsBaseline = ratios(g.Median, base.Median)
		}
	}
	return sum
}

func ratios(a, b Stats) map[string]float64 {
	out := map[string]float64{}
	for _, m := range allMetrics {
		if d := b.metric(m); d > 0 {
			out[m] = a.metric(m) / d
		}
	}
	return out
}

// groupStats computes one group's figures in one run.
func groupStats(r RunResult, g GroupRun, sc *Scenario) Stats {
	warmup := sc.Warmup.D().Seconds()
	s := Stats{Ops: float64(g.Ops), Errors: float64(g.Errors), Throughput: g.OpsPerSec()}
	if from := sc.MeasureFrom.D().Seconds(); from > 0 {
		s.Throughput = seriesRate(g.Series, g.Start+from, g.End)
	}
	if h := g.Latency; h != nil && h.Count() > 0 {
		s.Mean = micros(h.Mean())
		s.P50 = micros(h.Quantile(0.50))
		s.P99 = micros(h.Quantile(0.99))
		s.P999 = micros(h.Quantile(0.999))
		s.Max = micros(h.Max())
	}
	if st := g.Staleness; st != nil {
		if h := st.Staleness; h != nil && h.Count() > 0 {
			s.StaleP50 = micros(h.Quantile(0.50))
			s.StaleP99 = micros(h.Quantile(0.99))
			s.StaleMax = micros(h.Max())
		}
		s.StaleReads = float64(st.Stale)
		s.Violations = float64(st.Violations)
	}
	if len(r.Repl) > 0 {
		s.StandbyShare = standbyShare(r.Repl)
	}
	if h := g.Latency; h != nil && h.Count() > 0 {
		s.P80 = micros(h.Quantile(0.80))
	}
	if g.Role == RoleNoise && r.TSEnd > r.TSStart {
		s.Before = seriesRate(g.Series, g.Start+warmup, r.TSStart)
		s.During = seriesRate(g.Series, r.TSStart, r.TSEnd)
		s.After = seriesRate(g.Series, r.TSEnd, g.End)
	}
	return s
}

// seriesRate is the throughput over the buckets that lie wholly within
// [from, to] seconds; 0 when none does.
func seriesRate(series []int32, from, to float64) float64 {
	w := SeriesBucket.Seconds()
	first := int(math.Ceil(from/w - 1e-9))
	last := int(math.Floor(to/w+1e-9)) - 1 // last bucket ending by to
	first = max(first, 0)
	last = min(last, len(series)-1)
	if last < first {
		return 0
	}
	var n int64
	for _, c := range series[first : last+1] {
		n += int64(c)
	}
	return float64(n) / (float64(last-first+1) * w)
}

func summarizeVariant(variant string, runs []RunResult) VariantSummary {
	var tput, tcpu, pcpu, alloc, gcs, busy, others, steal, iow, wall, lg, lb []float64
	vs := VariantSummary{Variant: variant}
	for _, r := range runs {
		ops, rate := runThroughput(r)
		if rate > 0 {
			tput = append(tput, rate)
		}
		if ops > 0 {
			tcpu = append(tcpu, r.Server.TierdbCPU/float64(ops)*1e6)
			pcpu = append(pcpu, r.Server.PostgresCPU/float64(ops)*1e6)
			alloc = append(alloc, r.Server.TierdbAllocBytes/float64(ops))
		}
		gcs = append(gcs, float64(r.Server.TierdbGCs))
		busy = append(busy, r.Server.BusyPct)
		others = append(others, r.Server.OthersPct)
		lg = append(lg, r.Server.LoadGenCPUPct)
		lb = append(lb, r.Server.LoadBusyPct)
		steal = append(steal, r.Server.StealPct)
		iow = append(iow, r.Server.IOWait)
		wall = append(wall, r.WallSeconds)
		if r.CutOff {
			vs.CutOff++
		}
	}
	vs.Throughput = Median(tput)
	vs.TierdbCPUPerOp = Median(tcpu)
	vs.PostgresCPUPerOp = Median(pcpu)
	vs.AllocPerOp = Median(alloc)
	vs.GCs = Median(gcs)
	vs.BusyPct = Median(busy)
	vs.OthersPct = Median(others)
	vs.LoadGenCPUPct = Median(lg)
	vs.LoadBusyPct = Median(lb)
	vs.StealPct = Median(steal)
	vs.IOWaitPct = Median(iow)
	vs.WallSeconds = Median(wall)
	vs.Fairness = medianFairness(runs)
	return vs
}

// medianStats takes the median of every field separately.
func medianStats(reps []Stats) Stats {
	pick := func(f func(Stats) float64) float64 {
		xs := make([]float64, len(reps))
		for i, r := range reps {
			xs[i] = f(r)
		}
		return Median(xs)
	}
	return Stats{
		Ops:        pick(func(s Stats) float64 { return s.Ops }),
		Errors:     pick(func(s Stats) float64 { return s.Errors }),
		Mean:       pick(func(s Stats) float64 { return s.Mean }),
		P50:        pick(func(s Stats) float64 { return s.P50 }),
		P99:        pick(func(s Stats) float64 { return s.P99 }),
		P999:       pick(func(s Stats) float64 { return s.P999 }),
		Max:        pick(func(s Stats) float64 { return s.Max }),
		Throughput: pick(func(s Stats) float64 { return s.Throughput }),
		Before:     pick(func(s Stats) float64 { return s.Before }),
		During:     pick(func(s Stats) float64 { return s.During }),
		After:      pick(func(s Stats) float64 { return s.After }),

		StaleP50:     pick(func(s Stats) float64 { return s.StaleP50 }),
		StaleP99:     pick(func(s Stats) float64 { return s.StaleP99 }),
		StaleMax:     pick(func(s Stats) float64 { return s.StaleMax }),
		StaleReads:   pick(func(s Stats) float64 { return s.StaleReads }),
		Violations:   pick(func(s Stats) float64 { return s.Violations }),
		StandbyShare: pick(func(s Stats) float64 { return s.StandbyShare }),
		P80:          pick(func(s Stats) float64 { return s.P80 }),
	}
}

// Median of xs (the mean of the middle two for an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// runThroughput is the run's operations, all groups together, and their
// rate over the run's span (0 when nothing ran).
func runThroughput(r RunResult) (ops int64, rate float64) {
	start, end := math.Inf(1), math.Inf(-1)
	for _, g := range r.Groups {
		ops += g.Ops
		if g.Ops > 0 {
			start, end = min(start, g.Start), max(end, g.End)
		}
	}
	if end > start {
		rate = float64(ops) / (end - start)
	}
	return ops, rate
}

// pairedRatios are t's metric under t.Variant over the same under the
// reference variant, one per repetition that ran both. Consecutive runs
// share the machine's state of the moment, so these ratios are free of
// the drift between repetitions that the ratio of medians carries.
func pairedRatios(sc *Scenario, runs []RunResult, t Target) []float64 {
	value := func(r RunResult) float64 {
		if t.Group == "" {
			_, rate := runThroughput(r)
			return rate
		}
		for _, g := range r.Groups {
			if g.Name == t.Group {
				return groupStats(r, g, sc).metric(t.Metric)
			}
		}
		return 0
	}
	byRep := map[int][2]float64{}
	for _, r := range runs {
		v := byRep[r.Rep]
		switch r.Variant {
		case sc.Reference:
			v[0] = value(r)
		case t.Variant:
			v[1] = value(r)
		}
		byRep[r.Rep] = v
	}
	var out []float64
	for rep := 1; rep <= sc.Repeat; rep++ {
		if v := byRep[rep]; v[0] > 0 && v[1] > 0 {
			out = append(out, v[1]/v[0])
		}
	}
	return out
}

// meanCI95 is the mean of xs and the half-width of its 95 % confidence
// interval (Student's t). xs needs at least two values.
func meanCI95(xs []float64) (mean, half float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, tQuantile975(len(xs)-1) * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom:
// the table up to 30, then the Cornish-Fisher expansion (within 0.1 %).
func tQuantile975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df <= len(table) {
		return table[df-1]
	}
	const z = 1.959964
	nu := float64(df)
	return z + (z*z*z+z)/(4*nu) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*nu*nu)
}
