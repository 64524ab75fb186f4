package bench

import (
	"fmt"
	"slices"
)

// Target is one acceptance criterion, checked on the medians across
// repetitions. Exactly one of the criterion fields is set.
type Target struct {
	// Name is what the report prints, e.g. "time-sensitive p50 ≥70% lower".
	Name    string `yaml:"name" json:"name"`
	Variant string `yaml:"variant" json:"variant"`
	// Group is the group measured; empty means all groups together, which
	// only makes sense for throughput.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// Metric: mean, p50, p99, p999, max (latency) or throughput (ops/s);
	// minVsBest also takes before and during, a noise group's throughput
	// before and during the time-sensitive phase.
	Metric string `yaml:"metric,omitempty" json:"metric,omitempty"`

	// MinReduction: 1 − variant/reference ≥ value (0.7 = at least 70% lower).
	MinReduction *float64 `yaml:"minReduction,omitempty" json:"minReduction,omitempty"`
	// MaxVsBaseline: variant/idle baseline ≤ value.
	MaxVsBaseline *float64 `yaml:"maxVsBaseline,omitempty" json:"maxVsBaseline,omitempty"`
	// Within: |variant/reference − 1| ≤ value.
	Within *float64 `yaml:"within,omitempty" json:"within,omitempty"`
	// MaxNoiseDrop: 1 − during/before ≤ value for a noise group's
	// throughput around the time-sensitive phase.
	MaxNoiseDrop *float64 `yaml:"maxNoiseDrop,omitempty" json:"maxNoiseDrop,omitempty"`
	// MinRecovery: after/before ≥ value for a noise group's throughput.
	MinRecovery *float64 `yaml:"minRecovery,omitempty" json:"minRecovery,omitempty"`
	// MinVsPhysics: during/physics ≥ value for a noise group's throughput
	// during the time-sensitive phase, physics being what the server has
	// left for the noise once the time-sensitive clients are served:
	//
	//	physics = before − X·c_ts/c
	//
	// before: the noise's throughput before the phase; X: the
	// time-sensitive groups' throughput; c_ts: server CPU (tierdb and
	// PostgreSQL) per operation of the time-sensitive clients alone (the
	// idle baseline); c: server CPU per noise operation in the variant,
	// what is left of the variant's server CPU once its N_ts time-sensitive
	// operations are charged c_ts each, over its N noise operations:
	//
	//	c = (c_all·(N_ts + N) − c_ts·N_ts) / N
	//
	// with c_all the variant's CPU per operation, all groups. So each
	// time-sensitive operation displaces c_ts/c noise operations of a
	// saturated server, however long the phase is against the run. Needs
	// the baseline.
	MinVsPhysics *float64 `yaml:"minVsPhysics,omitempty" json:"minVsPhysics,omitempty"`
	// MinVsBest: variant/max(metric of the BestOf variants) ≥ value, for
	// throughput (1.2 = at least 20% above the better of them).
	MinVsBest *float64 `yaml:"minVsBest,omitempty" json:"minVsBest,omitempty"`
	BestOf    []string `yaml:"bestOf,omitempty" json:"bestOf,omitempty"`
	// MaxViolations: an S group's reads over its staleness bound, in the
	// worst repetition, ≤ value.
	MaxViolations *float64 `yaml:"maxViolations,omitempty" json:"maxViolations,omitempty"`
	// AtMost: the variant's metric ≤ value, for the users' fairness
	// (unfairness: U_f averaged over 1 s windows; unfairnessSpan: U_f over
	// the whole span; latencyCV: V_l; userSpread: 1 − the slowest user's
	// ops/s per weight over the fastest's; as fractions, no group) or a group's
	// latency (value in milliseconds).
	AtMost *float64 `yaml:"atMost,omitempty" json:"atMost,omitempty"`
}

// Metric names.
var (
	latencyMetrics = []string{"mean", "p50", "p99", "p999", "max"}
	allMetrics     = append(slices.Clone(latencyMetrics), "throughput")
	fairMetrics    = []string{"unfairness", "unfairnessSpan", "latencyCV", "userSpread"}
	// throughputMetrics: a group's throughput over its whole run, or a
	// noise group's before and during the time-sensitive phase.
	throughputMetrics = []string{"throughput", "before", "during"}
)

func (t Target) kind() string {
	switch {
	case t.MinReduction != nil:
		return "minReduction"
	case t.MaxVsBaseline != nil:
		return "maxVsBaseline"
	case t.Within != nil:
		return "within"
	case t.MaxNoiseDrop != nil:
		return "maxNoiseDrop"
	case t.MinRecovery != nil:
		return "minRecovery"
	case t.MinVsPhysics != nil:
		return "minVsPhysics"
	case t.MinVsBest != nil:
		return "minVsBest"
	case t.MaxViolations != nil:
		return "maxViolations"
	case t.AtMost != nil:
		return "atMost"
	}
	return ""
}

func (t Target) validate(where string, s *Scenario) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, where+": "+fmt.Sprintf(format, args...)) }
	if t.Name == "" {
		bad("name is required (the report prints it)")
	}
	n := 0
	for _, p := range []*float64{t.MinReduction, t.MaxVsBaseline, t.Within, t.MaxNoiseDrop, t.MinRecovery, t.MinVsPhysics, t.MinVsBest, t.MaxViolations, t.AtMost} {
		if p != nil {
			n++
			if *p < 0 {
				bad("the criterion's value cannot be negative")
			}
		}
	}
	if n != 1 {
		bad("exactly one of minReduction, maxVsBaseline, within, maxNoiseDrop, minRecovery, minVsPhysics, minVsBest, maxViolations, atMost is needed")
		return errs
	}
	if _, ok := s.Variant(t.Variant); !ok {
		bad("variant %q is not a variant", t.Variant)
	}
	var g Group
	if t.Group != "" {
		var ok bool
		if g, ok = s.Group(t.Group); !ok {
			bad("group %q is not a group", t.Group)
		}
	}
	if len(t.BestOf) > 0 && t.kind() != "minVsBest" {
		bad("bestOf is only for minVsBest")
	}
	switch t.kind() {
	case "minVsBest":
		if !slices.Contains(throughputMetrics, t.Metric) {
			bad("minVsBest compares throughput; set metric to one of %v", throughputMetrics)
		}
		if t.Metric != "throughput" && t.Group == "" {
			bad("metric %s is a noise group's throughput: set group", t.Metric)
		}
		if len(t.BestOf) == 0 {
			bad("minVsBest needs bestOf: the variants to beat")
		}
		for _, name := range t.BestOf {
			if _, ok := s.Variant(name); !ok {
				bad("bestOf: %q is not a variant", name)
			}
		}
	case "maxViolations":
		if t.Metric != "" {
			bad("maxViolations counts reads; leave metric out")
		}
		if t.Group == "" || g.Kind != KindStaleness {
			bad("maxViolations needs a group of kind %s", KindStaleness)
		}
	case "minReduction", "within", "maxVsBaseline":
		if !slices.Contains(allMetrics, t.Metric) {
			bad("metric must be one of %v, got %q", allMetrics, t.Metric)
		}
		if t.Group == "" && t.Metric != "throughput" {
			bad("a latency metric needs a group")
		}
		if t.kind() != "maxVsBaseline" && s.Reference == "" {
			bad("%s compares with the reference variant, and there is none (no variant with qos: off; set reference)", t.kind())
		}
		if t.kind() == "maxVsBaseline" {
			if !s.BaselineOn() {
				bad("maxVsBaseline needs the baseline run (baseline: true)")
			}
			if t.Group == "" || g.Role != RoleTimeSensitive {
				bad("maxVsBaseline needs a time-sensitive group (only those run in the baseline)")
			}
		}
	case "atMost":
		switch {
		case slices.Contains(fairMetrics, t.Metric):
			if t.Group != "" {
				bad("%s is over all the users; leave group out", t.Metric)
			}
			if !s.usesUsers() {
				bad("%s needs groups with connectionsPerUser", t.Metric)
			}
		case slices.Contains(latencyMetrics, t.Metric):
			if t.Group == "" {
				bad("a latency metric needs a group")
			}
		default:
			bad("atMost takes a metric of %v or %v, got %q", fairMetrics, latencyMetrics, t.Metric)
		}
	case "maxNoiseDrop", "minRecovery", "minVsPhysics":
		if t.kind() == "minVsPhysics" && !s.BaselineOn() {
			bad("minVsPhysics needs the baseline run (baseline: true)")
		}
		if t.Metric != "" && t.Metric != "throughput" {
			bad("%s is about throughput; leave metric out", t.kind())
		}
		if t.Group == "" || g.Role != RoleNoise {
			bad("%s needs a noise group", t.kind())
		}
		if len(s.groupsWithRole(RoleTimeSensitive)) == 0 {
			bad("%s needs a time-sensitive group to define the phases", t.kind())
		}
	}
	return errs
}

// TargetResult is a target checked against a summary.
type TargetResult struct {
	Target
	// Value is the measured quantity the criterion bounds (a reduction, a
	// ratio or a drop, as a fraction).
	Value float64 `json:"value"`
	// Limit is the criterion's bound.
	Limit float64 `json:"limit"`
	Pass  bool    `json:"pass"`
	// Measured describes the figures, e.g. "412 µs vs 2310 µs (−82%)".
	Measured string `json:"measured"`
	// Missing says why the target could not be checked (no data).
	Missing string `json:"missing,omitempty"`
}

// Evaluate checks every target of the scenario against sum.
func Evaluate(s *Scenario, sum *Summary) []TargetResult {
	out := make([]TargetResult, 0, len(s.Targets))
	for _, t := range s.Targets {
		out = append(out, evaluate(s, t, sum))
	}
	return out
}

func evaluate(s *Scenario, t Target, sum *Summary) TargetResult {
	r := TargetResult{Target: t}
	metricOf := func(variant string) (float64, bool) {
		if t.Group == "" {
			tp, ok := sum.TotalThroughput[variant]
			return tp, ok
		}
		gs, ok := sum.Find(variant, t.Group)
		if !ok {
			return 0, false
		}
		return gs.Median.metric(t.Metric), true
	}
	unit := func(v float64) string {
		if slices.Contains(throughputMetrics, t.Metric) || t.Group == "" {
			return fmt.Sprintf("%.0f ops/s", v)
		}
		return fmtMicros(v)
	}
	switch t.kind() {
	case "minVsBest":
		v, ok := metricOf(t.Variant)
		best, bestName := 0.0, ""
		for _, name := range t.BestOf {
			if x, ok := metricOf(name); ok && x > best {
				best, bestName = x, name
			}
		}
		if !ok || best == 0 {
			r.Missing = "no data for " + t.Variant + " or the variants to beat"
			return r
		}
		r.Value, r.Limit = v/best, *t.MinVsBest
		r.Pass = r.Value >= r.Limit
		r.Measured = fmt.Sprintf("%s vs %s (%s, the better of %v): %.2f×", unit(v), unit(best), bestName, t.BestOf, r.Value)
	case "maxViolations":
		gs, ok := sum.Find(t.Variant, t.Group)
		if !ok || len(gs.Reps) == 0 {
			r.Missing = "no staleness data"
			return r
		}
		worst := 0.0
		for _, rep := range gs.Reps {
			worst = max(worst, rep.Violations)
		}
		r.Value, r.Limit = worst, *t.MaxViolations
		r.Pass = r.Value <= r.Limit
		r.Measured = fmt.Sprintf("%.0f reads over the bound (worst repetition); staleness p99 %s, max %s", worst, fmtMicros(gs.Median.StaleP99), fmtMicros(gs.Median.StaleMax))
	case "minReduction", "within":
		v, ok1 := metricOf(t.Variant)
		ref, ok2 := metricOf(s.Reference)
		if !ok1 || !ok2 || ref == 0 {
			r.Missing = "no data for " + t.Variant + " or " + s.Reference
			return r
		}
		ratio := v / ref
		if t.kind() == "minReduction" {
			r.Value, r.Limit = 1-ratio, *t.MinReduction
			r.Pass = r.Value >= r.Limit
			r.Measured = fmt.Sprintf("%s vs %s: %s", unit(v), unit(ref), fmtChange(ratio))
		} else {
			r.Value, r.Limit = ratio-1, *t.Within
			r.Pass = abs(r.Value) <= r.Limit
			r.Measured = fmt.Sprintf("%s vs %s: %s", unit(v), unit(ref), fmtChange(ratio))
		}
	case "maxVsBaseline":
		v, ok1 := metricOf(t.Variant)
		b, ok2 := sum.Find(BaselineVariant, t.Group)
		if !ok1 || !ok2 || b.Median.metric(t.Metric) == 0 {
			r.Missing = "no baseline data"
			return r
		}
		base := b.Median.metric(t.Metric)
		r.Value, r.Limit = v/base, *t.MaxVsBaseline
		r.Pass = r.Value <= r.Limit
		r.Measured = fmt.Sprintf("%s vs idle %s: %.2f×", unit(v), unit(base), r.Value)
	case "atMost":
		r.Limit = *t.AtMost
		if slices.Contains(latencyMetrics, t.Metric) {
			v, ok := metricOf(t.Variant)
			if !ok {
				r.Missing = "no data for " + t.Variant
				return r
			}
			r.Value = v / 1000
			r.Measured = fmt.Sprintf("%s %s, objective %s", t.Metric, fmtMicros(v), fmtMicros(r.Limit*1000))
		} else {
			f := sum.variantFairness(t.Variant)
			if f == nil {
				r.Missing = "no per-user data for " + t.Variant
				return r
			}
			r.Value = map[string]float64{"unfairness": f.UfMean, "unfairnessSpan": f.UfSpan, "latencyCV": f.CV, "userSpread": f.spread()}[t.Metric]
			r.Measured = fmt.Sprintf("%s %.1f%% over %d users (%d windows of 1 s), limit %.0f%%", t.Metric, 100*r.Value, f.Users, f.Windows, 100*r.Limit)
			if t.Metric == "unfairness" && f.UfFloor > 0 {
				r.Measured += fmt.Sprintf("; whole operations allow no less than %.1f%%", 100*f.UfFloor)
			}
		}
		r.Pass = r.Value <= r.Limit
	case "maxNoiseDrop", "minRecovery":
		gs, ok := sum.Find(t.Variant, t.Group)
		if !ok || gs.Median.Before <= 0 {
			r.Missing = "no throughput before the time-sensitive phase"
			return r
		}
		m := gs.Median
		if t.kind() == "maxNoiseDrop" {
			r.Value, r.Limit = 1-m.During/m.Before, *t.MaxNoiseDrop
			r.Pass = r.Value <= r.Limit
			r.Measured = fmt.Sprintf("%.0f ops/s during vs %.0f before: %s", m.During, m.Before, fmtChange(m.During/m.Before))
		} else {
			r.Value, r.Limit = m.After/m.Before, *t.MinRecovery
			r.Pass = r.Value >= r.Limit && m.After > 0
			r.Measured = fmt.Sprintf("%.0f ops/s after vs %.0f before: %s", m.After, m.Before, fmtChange(m.After/m.Before))
		}
	case "minVsPhysics":
		return physicsTarget(r, s, sum)
	}
	return r
}

// physicsTarget checks a minVsPhysics target (see Target.MinVsPhysics).
func physicsTarget(r TargetResult, s *Scenario, sum *Summary) TargetResult {
	t := r.Target
	gs, ok := sum.Find(t.Variant, t.Group)
	v, ok2 := sum.variant(t.Variant)
	b, ok3 := sum.variant(BaselineVariant)
	if !ok || !ok2 || !ok3 || gs.Median.Before <= 0 {
		r.Missing = "no noise throughput before the phase, or no baseline"
		return r
	}
	var x, nts, n float64
	for _, g := range s.groupsWithRole(RoleTimeSensitive) {
		if ts, ok := sum.Find(t.Variant, g.Name); ok {
			x += ts.Median.Throughput
			nts += ts.Median.Ops
		}
	}
	for _, g := range s.groupsWithRole(RoleNoise) {
		if ns, ok := sum.Find(t.Variant, g.Name); ok {
			n += ns.Median.Ops
		}
	}
	cts, call := b.TierdbCPUPerOp+b.PostgresCPUPerOp, v.TierdbCPUPerOp+v.PostgresCPUPerOp
	if cts <= 0 || call <= 0 || n <= 0 {
		r.Missing = "no server CPU figures or operation counts"
		return r
	}
	c := (call*(nts+n) - cts*nts) / n
	if c <= 0 {
		r.Missing = fmt.Sprintf("the time-sensitive operations alone account for the variant's server CPU (%.0f µs an operation, %.0f alone)", call, cts)
		return r
	}
	physics := gs.Median.Before - x*cts/c
	if physics <= 0 {
		r.Missing = fmt.Sprintf("physics leaves the noise nothing (%.0f ops/s of time-sensitive work at %.1f noise operations each)", x, cts/c)
		return r
	}
	r.Value, r.Limit = gs.Median.During/physics, *t.MinVsPhysics
	r.Pass = r.Value >= r.Limit
	r.Measured = fmt.Sprintf("%.0f ops/s during vs %.0f physics leaves (%.0f before − %.0f time-sensitive ops/s × %.2f): %.2f×", gs.Median.During, physics, gs.Median.Before, x, cts/c, r.Value)
	return r
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
