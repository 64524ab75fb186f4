package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tierdb/internal/bench"
)

func TestScenarioCommandLine(t *testing.T) {
	if err := runScenario([]string{"-h"}); err != nil {
		t.Errorf("-h: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name one scenario"},
		{[]string{"--quick", "baseline"}, "tierdb-bench baseline [flags]"},
		{[]string{"no-such-scenario"}, "no-such-scenario"},
		{[]string{"--from-results", "x.json", "smoke"}, "takes no scenario"},
	} {
		err := runScenario(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runScenario(%q) = %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestFromResultsRebuildsTheReport goes through the flag parsing to the
// report, without servers: a results.json in, report.md and plots out.
func TestFromResultsRebuildsTheReport(t *testing.T) {
	sc, err := bench.LoadScenario("smoke")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res := &bench.Results{Scenario: sc, Command: "tierdb-bench smoke", Started: time.Now(), Finished: time.Now()}
	if err := bench.WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "again")
	if err := runScenario([]string{"--from-results", filepath.Join(dir, "results.json"), "--out", out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "- Command: `tierdb-bench smoke`") {
		t.Errorf("report.md:\n%s", md)
	}
}

// A rebuilt report evaluates the targets afresh: a stored outcome from an
// older evaluation does not survive.
func TestFromResultsEvaluatesTargetsAfresh(t *testing.T) {
	sc, err := bench.LoadScenario("smoke")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Targets) == 0 {
		t.Fatal("smoke has no targets to evaluate")
	}
	dir := t.TempDir()
	stale := bench.TargetResult{Target: sc.Targets[0], Pass: true, Measured: "a stale outcome"}
	res := &bench.Results{Scenario: sc, Summary: &bench.Summary{}, Targets: []bench.TargetResult{stale}, Started: time.Now(), Finished: time.Now()}
	if err := bench.WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "again")
	if err := runScenario([]string{"--from-results", filepath.Join(dir, "results.json"), "--out", out, "--no-plots"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "a stale outcome") {
		t.Errorf("the stored target outcome survived the rebuild:\n%s", md)
	}
	if !strings.Contains(string(md), sc.Targets[0].Name) {
		t.Errorf("the target %q is missing from the rebuilt report:\n%s", sc.Targets[0].Name, md)
	}
}
