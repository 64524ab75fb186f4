package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodScenario = `
name: tiny
records: 500
groups:
  - name: ts
    clients: 2
    tier: high
    mix: {update: 1}
    startAfter: 1s
    ops: 100
  - name: noise
    clients: 32-serverCPUs
    tier: low
    mix: {read: 0.5, update: 0.5}
    afterOthers: 500ms
variants:
  - {name: "off", qos: "off"}
  - {name: on-t2, qos: "on", threshold: 2, cpuPools: "priority=0-1;standard=0-1;restricted=1"}
targets:
  - {name: p50 down, variant: on-t2, group: ts, metric: p50, minReduction: 0.5}
  - {name: close to idle, variant: on-t2, group: ts, metric: p999, maxVsBaseline: 2}
  - {name: noise drop, variant: on-t2, group: noise, maxNoiseDrop: 0.35}
`

func TestParseScenarioDefaults(t *testing.T) {
	s, err := ParseScenario(strings.NewReader(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if s.FieldCount != 10 || s.FieldLength != 100 || s.Distribution != "zipfian" || s.Repeat != 1 {
		t.Errorf("defaults: fieldCount %d fieldLength %d distribution %q repeat %d", s.FieldCount, s.FieldLength, s.Distribution, s.Repeat)
	}
	ts, noise := s.Groups[0], s.Groups[1]
	if ts.Role != RoleTimeSensitive || noise.Role != RoleNoise {
		t.Errorf("roles by tier: ts %q, noise %q", ts.Role, noise.Role)
	}
	if ts.Mode != ModeClosed || !*ts.Samples || *noise.Samples {
		t.Errorf("mode %q, samples ts %v noise %v", ts.Mode, *ts.Samples, *noise.Samples)
	}
	if ts.StartAfter.D() != time.Second || noise.AfterOthers.D() != 500*time.Millisecond {
		t.Errorf("durations: startAfter %s afterOthers %s", ts.StartAfter, noise.AfterOthers)
	}
	if got := noise.Clients.Resolve(1); got != 31 {
		t.Errorf("32-serverCPUs with 1 CPU = %d", got)
	}
	if s.Reference != "off" || !s.BaselineOn() {
		t.Errorf("reference %q, baseline %v", s.Reference, s.BaselineOn())
	}
	args := strings.Join(s.Variants[1].ServeArgs(), " ")
	if args != "--qos on --threshold 2 --cpu-pools priority=0-1;standard=0-1;restricted=1" {
		t.Errorf("serve args: %s", args)
	}
	if got := strings.Join(s.Variants[0].ServeArgs(), " "); got != "--qos off" {
		t.Errorf("off args: %s", got)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	base := func(replace, with string) string {
		if !strings.Contains(goodScenario, replace) {
			t.Fatalf("test bug: %q not in the scenario", replace)
		}
		return strings.Replace(goodScenario, replace, with, 1)
	}
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key", base("records: 500", "records: 500\nrecrods: 3"), "field recrods not found"},
		{"no records", base("records: 500", "records: 0"), "records must be at least 1"},
		{"bad distribution", base("records: 500", "records: 500\ndistribution: pareto"), "distribution must be zipfian or uniform"},
		{"bad tier", base("tier: high", "tier: urgent"), "tier must be high, normal or low"},
		{"two ends", base("ops: 100", "ops: 100\n    duration: 5s"), "exactly one of duration, ops and afterOthers"},
		{"no end", base("    ops: 100\n", ""), "exactly one of duration, ops and afterOthers"},
		{"bad duration", base("startAfter: 1s", "startAfter: soon"), "want a duration"},
		{"empty mix", base("mix: {update: 1}", "mix: {}"), "mix needs"},
		{"rate without rate", base("mix: {update: 1}", "mix: {update: 1}\n    mode: rate"), "mode rate needs rate"},
		{"bad clients", base("clients: 2", "clients: lots"), "want a number or terms"},
		{"zero clients", base("clients: 2", "clients: 0"), "clients must be at least 1"},
		{"duplicate group", base("name: noise", "name: ts"), "used twice"},
		{"duplicate variant", base(`name: on-t2`, `name: "off"`), "used twice"},
		{"reserved variant", base(`name: on-t2`, `name: baseline`), "reserved"},
		{"bad qos", base(`qos: "off"`, `qos: maybe`), "qos must be on or off"},
		{"threshold with qos off", base(`{name: "off", qos: "off"}`, `{name: "off", qos: "off", threshold: 3}`), "need qos: on"},
		{"bad pools", base("restricted=1", "restricted=one"), "not a CPU list"},
		{"harness-owned arg", base(`threshold: 2,`, `threshold: 2, args: ["--listen=:1"],`), "set by the harness"},
		{"target unknown variant", base("variant: on-t2, group: ts, metric: p50", "variant: on-t9, group: ts, metric: p50"), "is not a variant"},
		{"target bad metric", base("metric: p50", "metric: p42"), "metric must be one of"},
		{"target two criteria", base("minReduction: 0.5", "minReduction: 0.5, within: 0.1"), "exactly one of minReduction"},
		{"noise target on a ts group", base("group: noise, maxNoiseDrop", "group: ts, maxNoiseDrop"), "needs a noise group"},
		{"all afterOthers", base("    ops: 100\n", "    afterOthers: 1s\n"), "at least one needs duration or ops"},
		{"empty", "", "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario(strings.NewReader(c.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	y := strings.Replace(strings.Replace(goodScenario, "records: 500", "records: 0", 1), "tier: high", "tier: urgent", 1)
	_, err := ParseScenario(strings.NewReader(y))
	if err == nil || !strings.Contains(err.Error(), "records") || !strings.Contains(err.Error(), "tier") {
		t.Errorf("want both problems, got %v", err)
	}
}

func TestClientCountExpressions(t *testing.T) {
	for expr, want := range map[string][2]int{ // value with 1 and with 4 CPUs
		"7":                     {7, 7},
		"serverCPUs":            {1, 4},
		"2*serverCPUs":          {2, 8},
		"32-serverCPUs":         {31, 28},
		"30 - 2*serverCPUs + 1": {29, 23},
	} {
		c, err := parseClientCount(expr)
		if err != nil {
			t.Errorf("%q: %v", expr, err)
			continue
		}
		if got := [2]int{c.Resolve(1), c.Resolve(4)}; got != want {
			t.Errorf("%q = %v, want %v", expr, got, want)
		}
	}
	for _, bad := range []string{"", "cpus", "2*cpus", "3*", "1.5"} {
		if _, err := parseClientCount(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBuiltinScenariosParse(t *testing.T) {
	names := BuiltinScenarios()
	for _, want := range []string{"fig4", "fig5", "fig7", "smoke", "qos-overhead", "qos-overhead-reads", "fig5-jfalse"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("built-in scenario %s missing from %v", want, names)
		}
	}
	for _, n := range names {
		s, err := LoadScenario(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if s.Name != n {
			t.Errorf("file %s.yaml names itself %q", n, s.Name)
		}
	}
	// The acceptance targets of the issue are fixed; a loosened one must
	// show up here.
	fig5, _ := LoadScenario("fig5")
	limits := map[string]float64{}
	for _, tg := range fig5.Targets {
		switch {
		case tg.MinReduction != nil:
			limits[tg.kind()+"/"+tg.Metric] = *tg.MinReduction
		case tg.MaxVsBaseline != nil:
			limits[tg.kind()] = *tg.MaxVsBaseline
		case tg.MaxNoiseDrop != nil:
			limits[tg.kind()] = *tg.MaxNoiseDrop
		}
	}
	want := map[string]float64{"minReduction/p50": 0.70, "minReduction/p999": 0.90, "maxVsBaseline": 2, "maxNoiseDrop": 0.35}
	for k, v := range want {
		if limits[k] != v {
			t.Errorf("fig5 target %s = %v, want %v", k, limits[k], v)
		}
	}
}

func TestLoadScenarioFromFileAndUnknownName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(goodScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScenario(path)
	if err != nil || s.Name != "tiny" {
		t.Fatalf("from file: %v, %+v", err, s)
	}
	_, err = LoadScenario("fig99")
	if err == nil || !strings.Contains(err.Error(), "fig5") {
		t.Errorf("an unknown name should list the built-in scenarios, got %v", err)
	}
}

func TestQuickShortensACopy(t *testing.T) {
	s, err := ParseScenario(strings.NewReader(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	s.Repeat = 3
	q := s.Quick()
	if q.Repeat != 1 || q.Groups[0].Ops != 25 || q.Groups[0].StartAfter.D() != 250*time.Millisecond {
		t.Errorf("quick: repeat %d ops %d startAfter %s", q.Repeat, q.Groups[0].Ops, q.Groups[0].StartAfter)
	}
	if q.Groups[1].AfterOthers.D() != 500*time.Millisecond {
		t.Errorf("afterOthers has a floor of 500ms, got %s", q.Groups[1].AfterOthers)
	}
	if s.Repeat != 3 || s.Groups[0].Ops != 100 {
		t.Error("Quick changed the original")
	}
	if err := q.Validate(); err != nil {
		t.Error(err)
	}
}

func TestRunOrderRotatesVariantsAfterTheBaseline(t *testing.T) {
	s, err := ParseScenario(strings.NewReader(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	s.Variants = append(s.Variants, Variant{Name: "on-t1", QoS: "on", Threshold: 1})
	names := func(rep int) string {
		var out []string
		for _, v := range runOrder(s, rep) {
			out = append(out, v.Name)
		}
		return strings.Join(out, ",")
	}
	for rep, want := range map[int]string{
		1: "baseline,off,on-t2,on-t1",
		2: "baseline,on-t2,on-t1,off",
		3: "baseline,on-t1,off,on-t2",
		4: "baseline,off,on-t2,on-t1",
	} {
		if got := names(rep); got != want {
			t.Errorf("repetition %d runs %s, want %s", rep, got, want)
		}
	}
}
