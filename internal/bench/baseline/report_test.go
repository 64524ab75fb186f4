package baseline

import (
	"strings"
	"testing"

	"tierdb/internal/bench"
)

func run(op, target string, round int, opsPerSec, p50 float64) runResult {
	return runResult{Op: op, Target: target, Round: round, OpsPerSec: opsPerSec, P50us: p50, P99us: 2 * p50,
		usage: usage{CPUBusyPct: []float64{50, 90 + float64(round)}}}
}

func TestSummarizeTakesMediansAndChecksAims(t *testing.T) {
	results := []runResult{
		// find: tierdb at 70% of direct, 100 µs slower: both aims met.
		run("find-by-_id", "tierdb", 1, 700, 300),
		run("find-by-_id", "direct", 1, 1000, 200),
		run("find-by-_id", "tierdb", 2, 9999, 1), // an outlier round the median ignores
		run("find-by-_id", "direct", 2, 1000, 200),
		run("find-by-_id", "tierdb", 3, 700, 300),
		run("find-by-_id", "direct", 3, 1, 9999),
		// insert: tierdb at 50% and 200 µs slower: both missed.
		run("insert", "tierdb", 1, 500, 400),
		run("insert", "direct", 1, 1000, 200),
	}
	sums := summarize(results, []opKind{opFind, opInsert}, 1)
	if len(sums) != 2 {
		t.Fatalf("got %d summaries", len(sums))
	}
	f := sums[0]
	if f.Tierdb.OpsPerSec != 700 || f.Direct.OpsPerSec != 1000 || f.Tierdb.P50us != 300 || f.Direct.P50us != 200 {
		t.Errorf("find medians wrong: %+v", f)
	}
	if f.Ratio != 0.7 || f.AddedP50us != 100 || !f.RatioMet || !f.AddedP50Met {
		t.Errorf("find verdict wrong: ratio %v added %v met %v/%v", f.Ratio, f.AddedP50us, f.RatioMet, f.AddedP50Met)
	}
	if f.Tierdb.ServerCPUBusyPct != 92 {
		t.Errorf("server CPU busy = %v, want the median of CPU 1's figures, 92", f.Tierdb.ServerCPUBusyPct)
	}
	i := sums[1]
	if i.Ratio != 0.5 || i.AddedP50us != 200 || i.RatioMet || i.AddedP50Met {
		t.Errorf("insert verdict wrong: %+v", i)
	}
}

func TestAimBoundariesAreInclusive(t *testing.T) {
	sums := summarize([]runResult{
		run("insert", "tierdb", 1, 600, 350),
		run("insert", "direct", 1, 1000, 200),
	}, []opKind{opInsert}, 1)
	if !sums[0].RatioMet || !sums[0].AddedP50Met {
		t.Errorf("exactly 60%% and exactly +150 µs should pass: %+v", sums[0])
	}
}

func TestMarkdownTable(t *testing.T) {
	table := markdownTable([]summary{{
		Op:     "insert",
		Tierdb: figures{OpsPerSec: 600, P50us: 350, P99us: 12000},
		Direct: figures{OpsPerSec: 1000, P50us: 200, P99us: 900},
		Ratio:  0.6, AddedP50us: 150, RatioMet: true, AddedP50Met: false,
	}})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header, separator and one row, got:\n%s", table)
	}
	want := "| insert | 600 | 1000 | 60% | 350 µs | 12.0 ms | 200 µs | 900 µs | +150 µs |"
	if lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
	if strings.Count(lines[0], "|") != strings.Count(lines[1], "|") {
		t.Errorf("header and separator have different column counts:\n%s", table)
	}
}

func TestReportReadsLikeTheScenarios(t *testing.T) {
	r := report{
		Command: "tierdb-bench baseline --rounds 1", MakeCommand: "make bench-baseline ARGS='--rounds 1'",
		Machine: bench.Machine{NProc: 2, CPUModel: "Test CPU", LoadAvgStart: "0.5", LoadAvgEnd: "0.7"},
		Layout:  "unpinned", PostgreSQL: "17.2", Tierdb: "tierdb 6.0.0-compatible",
		Settings: settings{Records: 10, Clients: 2, Rounds: 1, Duration: "1s", Warmup: "0s", ServerMonitoring: "poll"},
		Summary: summarize([]runResult{
			run("insert", "tierdb", 1, 600, 350),
			run("insert", "direct", 1, 1000, 200),
		}, []opKind{opInsert}, 1),
	}
	md := r.markdown()
	for _, want := range []string{
		"# tierdb bench: baseline",
		"- Command: `tierdb-bench baseline --rounds 1`",
		// The scenarios' machine section and acceptance table, word for word.
		bench.MachineMarkdown(r.Machine, "17.2", "tierdb 6.0.0-compatible", "unpinned"),
		"## Acceptance targets",
		"| throughput vs direct | insert | 60% (600 vs 1000 ops/s) | ≥ 60% of direct ops/s | **PASS** |",
		"| p50 added | insert | +150 µs (350 µs vs 200 µs) | ≤ 150 µs | **PASS** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("baseline.md lacks %q:\n%s", want, md)
		}
	}
}

func TestMakeCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "make bench-baseline"},
		{[]string{"--rounds", "1"}, "make bench-baseline ARGS='--rounds 1'"},
		{[]string{"--tierdb-args", "--log-level warn"}, `make bench-baseline ARGS='--tierdb-args '\''--log-level warn'\'''`},
	} {
		if got := makeCommandLine(tc.args); got != tc.want {
			t.Errorf("makeCommandLine(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
