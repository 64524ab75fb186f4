package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const replScenario = `
name: repl
records: 500
replicas: 2
pgCPUQuota: 0.2
period: 2s
groups:
  - name: reads
    clients: 4
    tier: normal
    mix: {read: 0.95, update: 0.05}
    duration: 10s
  - name: s
    kind: staleness
    clients: 1
    tier: normal
    mode: rate
    rate: 50
    writeRate: 200
    readPreference: {mode: adaptive, maxStalenessMS: 250}
    duration: 10s
variants:
  - {name: primary, qos: "off", readPreference: {mode: primary}}
  - {name: secondary, qos: "off", readPreference: {mode: secondary, maxStalenessMS: 1000}}
  - {name: adaptive, qos: "off", readPreference: {mode: adaptive}, args: [--balance-period, 1s], clients: {reads: 16}}
targets:
  - {name: beats both, variant: adaptive, group: reads, metric: throughput, bestOf: [primary, secondary], minVsBest: 1.0}
  - {name: bounded, variant: adaptive, group: s, maxViolations: 0}
`

func TestParseReplScenario(t *testing.T) {
	s, err := ParseScenario(strings.NewReader(replScenario))
	if err != nil {
		t.Fatal(err)
	}
	if s.Replicas != 2 || s.PGCPUQuota != 0.2 || s.Period.D() != 2*time.Second {
		t.Errorf("replicas %d quota %g period %s", s.Replicas, s.PGCPUQuota, s.Period)
	}
	reads, sg := s.Groups[0], s.Groups[1]
	if reads.Kind != KindYCSB || sg.Kind != KindStaleness || sg.WriteRate != 200 {
		t.Errorf("kinds %q %q, writeRate %g", reads.Kind, sg.Kind, sg.WriteRate)
	}
	prim, _ := s.Variant("primary")
	adapt, _ := s.Variant("adaptive")
	// A group's own read preference wins over the variant's.
	if rp := sg.readPreference(adapt); rp.Mode != "adaptive" || rp.MaxStalenessMS != 250 {
		t.Errorf("S group's read preference %v", rp)
	}
	if rp := reads.readPreference(prim); rp.Mode != "primary" {
		t.Errorf("reads under primary: %v", rp)
	}
	if n := reads.clientsIn(adapt, 4); n != 16 {
		t.Errorf("clients override: %d", n)
	}
	if n := reads.clientsIn(prim, 4); n != 4 {
		t.Errorf("no override: %d", n)
	}
	if strings.Contains(strings.Join(adapt.ServeArgs(), " "), "standby") {
		t.Error("a variant's serve flags carry the standbys: the harness adds them")
	}
	// Quick keeps periods of at least a second and copies the overrides.
	q := s.Quick()
	if q.Period.D() != time.Second {
		t.Errorf("quick period %s", q.Period)
	}
	q.Variants[2].Clients["reads"] = 1
	if adapt.Clients["reads"] != 16 {
		t.Error("Quick shares the variant's clients map")
	}
	if s.Reference != "primary" {
		t.Errorf("reference %q", s.Reference)
	}
}

func TestReplScenarioErrors(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{"replicas: 2\n", "replicas: 9\n|replicas must be 0…8"},
		{"replicas: 2\n", "replicas: 0\n|readPreference needs replicas"},
		{"mode: adaptive, maxStalenessMS: 250", "mode: fastest|mode must be one of"},
		{"{mode: primary}", "{mode: primary, maxStalenessMS: 5}|mode primary takes no staleness bound"},
		{"kind: staleness", "kind: s|kind must be ycsb or staleness"},
		{"    writeRate: 200\n", "    writeRate: 200\n    mix: {read: 1}\n|kind staleness has no mix"},
		{"    mix: {read: 0.95, update: 0.05}\n", "    mix: {read: 0.95, update: 0.05}\n    writeRate: 5\n|writeRate is only for kind staleness"},
		{"clients: {reads: 16}", "clients: {nope: 16}|\"nope\" is not a group"},
		{"clients: {reads: 16}", "clients: {reads: 0}|clients of reads must be at least 1"},
		{"args: [--balance-period, 1s]", "args: [--standby-urls, x]|--standby-urls is set by the harness"},
		{"bestOf: [primary, secondary], ", "bestOf: [primary, nope], |bestOf: \"nope\" is not a variant"},
		{"bestOf: [primary, secondary], ", "|minVsBest needs bestOf"},
		{"group: s, maxViolations", "group: reads, maxViolations|maxViolations needs a group of kind staleness"},
		{"period: 2s", "period: 10ms|period must be at least 100ms"},
		{"pgCPUQuota: 0.2", "pgCPUQuota: -1|pgCPUQuota cannot be negative"},
	} {
		repl, want, _ := strings.Cut(c.want, "|")
		src := strings.Replace(replScenario, c.edit, repl, 1)
		if src == replScenario {
			t.Fatalf("edit %q does not apply", c.edit)
		}
		_, err := ParseScenario(strings.NewReader(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s → %q: got %v, want an error containing %q", c.edit, repl, err, want)
		}
	}
}

func TestReadPreferenceDriver(t *testing.T) {
	for _, c := range []struct {
		rp   ReadPreference
		mode string
		tags string
	}{
		{ReadPreference{Mode: "primary"}, "primary", ""},
		{ReadPreference{Mode: "secondary"}, "secondary", ""},
		{ReadPreference{Mode: "secondary", MaxStalenessMS: 250}, "secondary", "tierdb=route,maxStalenessMS=250"},
		{ReadPreference{Mode: "adaptive"}, "nearest", "tierdb=adaptive"},
		{ReadPreference{Mode: "adaptive", MaxStalenessMS: 1000}, "nearest", "tierdb=adaptive,maxStalenessMS=1000"},
		{ReadPreference{Mode: "primaryPreferred"}, "primaryPreferred", ""},
		{ReadPreference{Mode: "secondaryPreferred", MaxStalenessMS: 5}, "secondaryPreferred", "tierdb=route,maxStalenessMS=5"},
		{ReadPreference{Mode: "nearest"}, "nearest", ""},
	} {
		d := c.rp.driver()
		if d.Mode().String() != c.mode {
			t.Errorf("%v: mode %s, want %s", c.rp, d.Mode(), c.mode)
		}
		var tags []string
		for _, set := range d.TagSets() {
			for _, tg := range set {
				tags = append(tags, tg.Name+"="+tg.Value)
			}
		}
		if got := strings.Join(tags, ","); got != c.tags {
			t.Errorf("%v: tags %q, want %q", c.rp, got, c.tags)
		}
		if _, ok := d.MaxStaleness(); ok {
			t.Errorf("%v: the driver's own maxStaleness (90 s floor) is set", c.rp)
		}
	}
}

func TestReadStaleness(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	// Writes 1…5 acknowledged at 10, 20, 30 ms, write 4 failed, write 5
	// at 50 ms.
	acks := []time.Duration{ms(10), ms(20), ms(30), -1, ms(50)}
	for _, c := range []struct {
		at   float64
		seen int64
		want float64
	}{
		{5, 0, 0},    // nothing acknowledged yet
		{10, 0, 0},   // write 1 acknowledged at the same instant: not before
		{15, 0, 5},   // missed write 1, acknowledged 5 ms earlier
		{35, 1, 15},  // missed writes 2 and 3: the oldest, 2, at 20 ms
		{35, 3, 0},   // saw every acknowledged write
		{45, 3, 0},   // write 4 failed: missing it is no staleness
		{60, 3, 10},  // missed write 5 (50 ms)
		{60, 5, 0},   // saw the newest
		{60, 4, 10},  // saw the failed write (applied after all), missed 5
		{25, 5, 0},   // saw a write acknowledged later than the read began
		{100, 0, 90}, // saw only stamp 0
	} {
		if got := readStaleness(acks, ms(c.at), c.seen); got != ms(c.want) {
			t.Errorf("read at %g ms seeing %d: staleness %s, want %s", c.at, c.seen, got, ms(c.want))
		}
	}

	// Two readers; bound 10 ms.
	st := stalenessOf(10, acks, [][]staleRead{
		{{ms(15), 0}, {ms(35), 1}, {ms(60), 5}},
		{{ms(60), 5}, {ms(61), 3}},
	})
	if st.Reads != 5 || st.Stale != 3 || st.Violations != 2 || st.Writes != 4 || st.WriteErrors != 1 || st.Regressions != 1 {
		t.Errorf("reads %d stale %d violations %d writes %d errors %d regressions %d", st.Reads, st.Stale, st.Violations, st.Writes, st.WriteErrors, st.Regressions)
	}
	if got := st.Staleness.Max(); got < ms(14.9) || got > ms(15.1) {
		t.Errorf("max staleness %s, want 15ms", got)
	}
	// Without a bound nothing is a violation; primary reads must see all.
	if st := stalenessOf(-1, acks, [][]staleRead{{{ms(100), 0}}}); st.Violations != 0 {
		t.Errorf("no bound: %d violations", st.Violations)
	}
	if b := stalenessBound(nil); b != 0 {
		t.Errorf("bound of primary reads %d", b)
	}
	if b := stalenessBound(&ReadPreference{Mode: "secondary"}); b != -1 {
		t.Errorf("bound of unbounded secondary reads %d", b)
	}
	if b := stalenessBound(&ReadPreference{Mode: "adaptive", MaxStalenessMS: 250}); b != 250 {
		t.Errorf("bound %d", b)
	}
}

func TestPeriodSeries(t *testing.T) {
	// 4 s of reads: 10 per 100 ms bucket, then 20.
	series := make([]int32, 40)
	for i := range series {
		series[i] = 10
		if i >= 20 {
			series[i] = 20
		}
	}
	h1, h2 := &Histogram{}, &Histogram{}
	for i := range 10 {
		h1.Record(time.Duration(i+1) * time.Millisecond)
		h2.Record(time.Duration(i+1) * 2 * time.Millisecond)
	}
	sample := func(tm float64, primary, s1, s2 int64, frac float64, stale int64) ReplSample {
		return ReplSample{T: tm, Primary: "node0", Reads: map[string]int64{"node0": primary, "node1": s1, "node2": s2}, Fraction: frac, StalenessMS: stale}
	}
	samples := []ReplSample{
		sample(0, 0, 0, 0, 0.1, 3),
		sample(1, 90, 5, 5, 0.2, 4),
		sample(2.05, 180, 10, 10, 0.3, 50),
		sample(3, 200, 40, 40, 0.4, -1),
		sample(4, 220, 70, 70, 0.5, 2),
	}
	ps := periodSeries(2*time.Second, 4.5, series, []*Histogram{h1, h2}, samples)
	if len(ps) != 2 {
		t.Fatalf("%d periods, want 2 (the 0.5 s stub at the end left out): %+v", len(ps), ps)
	}
	if ps[0].ReadsPerSec != 100 || ps[1].ReadsPerSec != 200 {
		t.Errorf("reads/s %g %g", ps[0].ReadsPerSec, ps[1].ReadsPerSec)
	}
	if math.Abs(ps[0].ReadP80Us-8000) > 100 || math.Abs(ps[1].ReadP80Us-16000) > 200 {
		t.Errorf("p80 %g %g", ps[0].ReadP80Us, ps[1].ReadP80Us)
	}
	// Period 0: 200 reads, 20 on standbys; period 1: 160 more, 120 on them.
	if math.Abs(ps[0].StandbyShare-0.1) > 1e-9 || math.Abs(ps[1].StandbyShare-0.75) > 1e-9 {
		t.Errorf("standby share %g %g", ps[0].StandbyShare, ps[1].StandbyShare)
	}
	if ps[0].Fraction != 0.3 || ps[1].Fraction != 0.5 {
		t.Errorf("fractions %g %g", ps[0].Fraction, ps[1].Fraction)
	}
	if ps[0].StalenessMS != 4 || ps[1].StalenessMS != -1 {
		t.Errorf("staleness %d %d", ps[0].StalenessMS, ps[1].StalenessMS)
	}
	if got := standbyShare(samples); math.Abs(got-140.0/360) > 1e-9 {
		t.Errorf("whole-run share %g", got)
	}
	if got := standbyShare(samples[:1]); got != -1 {
		t.Errorf("one sample: %g", got)
	}
}

func TestNodeQuotas(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cpu.cfs_quota_us"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	qs, err := applyNodeQuotas(root, "pg", []int{pid, pid, pid}, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 {
		t.Fatalf("%d groups, want one per node", len(qs))
	}
	for i := range 3 {
		dir := filepath.Join(root, "pg-node"+string(rune('0'+i)))
		for f, want := range map[string]string{"cpu.cfs_period_us": "10000", "cpu.cfs_quota_us": "2500"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if string(b) != want {
				t.Errorf("node%d %s = %q, want %q", i, f, b, want)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); strings.TrimSpace(string(b)) == "" {
			t.Errorf("node%d: no process moved in", i)
		}
	}
	for _, q := range qs {
		if err := q.remove(); err != nil {
			t.Fatal(err)
		}
	}
	// One node: one group named as before, the kernel's default period.
	qs, err = applyNodeQuotas(root, "single", []int{pid}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "single", "cpu.cfs_period_us")); string(b) != "100000" {
		t.Errorf("single node period %q", b)
	}
	_ = qs[0].remove()
	// A missing controller fails and leaves nothing behind.
	if _, err := applyNodeQuotas(t.TempDir(), "pg", []int{pid, pid}, 0.25); err == nil || !strings.Contains(err.Error(), "cgroup v1") {
		t.Errorf("missing controller: %v", err)
	}
}

func TestLayoutTextNodes(t *testing.T) {
	l, err := planLayout(LayoutOptions{Mode: LayoutShared, PGCPUQuota: 0.2, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Text, "each node in its own cgroup") || !strings.Contains(l.Text, "2 hot standbys") || l.Nodes != 3 {
		t.Errorf("layout text %q", l.Text)
	}
	l, _ = planLayout(LayoutOptions{Mode: LayoutShared, Nodes: 3})
	if !strings.Contains(l.Text, "no CPU quota") {
		t.Errorf("layout text without quota %q", l.Text)
	}
}

func TestEvaluateReplTargets(t *testing.T) {
	s, err := ParseScenario(strings.NewReader(replScenario))
	if err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Groups: []GroupSummary{
		{Variant: "primary", Group: "reads", Median: Stats{Throughput: 1000}},
		{Variant: "secondary", Group: "reads", Median: Stats{Throughput: 1500}},
		{Variant: "adaptive", Group: "reads", Median: Stats{Throughput: 1800}},
		{Variant: "adaptive", Group: "s", Reps: []Stats{{Violations: 0}, {Violations: 2}}, Median: Stats{Violations: 1}},
	}}
	got := Evaluate(s, sum)
	if !got[0].Pass || math.Abs(got[0].Value-1.2) > 1e-9 || !strings.Contains(got[0].Measured, "secondary") {
		t.Errorf("minVsBest: %+v", got[0])
	}
	// The worst repetition counts, not the median.
	if got[1].Pass || got[1].Value != 2 {
		t.Errorf("maxViolations: %+v", got[1])
	}
}

// TestReplBuiltinTargets pins the replication targets: a loosened
// one shows up here.
func TestReplBuiltinTargets(t *testing.T) {
	type key struct{ scenario, variant, group, kind string }
	got := map[key]float64{}
	for _, n := range []string{"decongestant-clients", "decongestant-switch", "staleness", "fig5b", "fig5b-paper"} {
		s, err := LoadScenario(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if s.Replicas < 1 {
			t.Errorf("%s: no replicas", n)
		}
		for _, tg := range s.Targets {
			k := key{n, tg.Variant, tg.Group, tg.kind()}
			switch tg.kind() {
			case "minVsBest":
				got[k] = max(got[k], *tg.MinVsBest)
				if len(tg.BestOf) != 2 {
					t.Errorf("%s: minVsBest against %v", n, tg.BestOf)
				}
			case "maxViolations":
				got[k] = *tg.MaxViolations
			case "minReduction":
				got[k] = *tg.MinReduction
			}
		}
	}
	for k, want := range map[key]float64{
		{"decongestant-clients", "adaptive-32", "reads", "minVsBest"}: 1.2,
		{"staleness", "adaptive", "s-1s", "maxViolations"}:            0,
		{"staleness", "adaptive", "s-250ms", "maxViolations"}:         0,
		{"fig5b", "on-t1", "ts", "minReduction"}:                      0.90,
		{"fig5b-paper", "on-t1", "ts", "minReduction"}:                0.90,
	} {
		v, ok := got[k]
		if !ok || v != want {
			t.Errorf("%v = %v (present %v), want %v", k, v, ok, want)
		}
	}
	s, _ := LoadScenario("staleness")
	bounds := map[int]bool{}
	for _, g := range s.Groups {
		if g.Kind == KindStaleness {
			bounds[g.ReadPreference.MaxStalenessMS] = true
		}
	}
	if !bounds[1000] || !bounds[250] {
		t.Errorf("staleness bounds %v, want 1 s and 250 ms", bounds)
	}
	for n, noiseTier := range map[string]string{"fig5b": "low", "fig5b-paper": "normal"} {
		f, _ := LoadScenario(n)
		ts, _ := f.Group("ts")
		if ts.WriteConcern == nil || ts.WriteConcern.W != "majority" || f.Replicas != 2 || ts.Ops != 15000 {
			t.Errorf("%s: write concern %+v, replicas %d, %d updates", n, ts.WriteConcern, f.Replicas, ts.Ops)
		}
		if noise, _ := f.Group("noise"); noise.Tier != noiseTier || noise.Clients.Resolve(1) != 31 {
			t.Errorf("%s: noise %d clients at %q, want 31 at %q", n, noise.Clients.Resolve(1), noise.Tier, noiseTier)
		}
	}
}
