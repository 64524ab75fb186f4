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
