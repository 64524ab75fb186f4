package bench

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkOutputs asserts that dir holds a well-formed results.json,
// summary.csv, report.md and plots, and returns the report's text.
func checkOutputs(t *testing.T, dir string, wantPlots []string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("results.json does not parse: %v", err)
	}
	res, err := LoadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) == 0 || res.Summary == nil {
		t.Errorf("results.json has %d runs, summary %v", len(res.Runs), res.Summary != nil)
	}

	f, err := os.Open(filepath.Join(dir, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("summary.csv: %v", err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("summary.csv: %d rows, header %v", len(rows), rows[0])
	}
	for _, r := range rows[1:] {
		if len(r) != len(csvHeader) || r[0] == "" || r[1] == "" {
			t.Errorf("summary.csv row %v", r)
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	for _, name := range wantPlots {
		path := filepath.Join(dir, name)
		pf, err := os.Open(path)
		if err != nil {
			t.Errorf("plot %s: %v", name, err)
			continue
		}
		img, err := png.Decode(bufio.NewReader(pf))
		pf.Close()
		if err != nil {
			t.Errorf("plot %s does not decode: %v", name, err)
			continue
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 150 {
			t.Errorf("plot %s is only %v", name, b)
		}
		if fi, _ := os.Stat(path); fi.Size() < 5000 {
			t.Errorf("plot %s is only %d bytes: nothing drawn?", name, fi.Size())
		}
		if !strings.Contains(report, "]("+name+")") {
			t.Errorf("report.md does not embed %s", name)
		}
	}
	return report
}

func TestReportFromCannedResults(t *testing.T) {
	dir := t.TempDir()
	res := cannedResults(t)
	res.Summary = Summarize(res.Scenario, res.Runs)
	if err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	// The report is made from what results.json holds, as --from-results
	// does.
	loaded, err := LoadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	loaded.Summary, loaded.Targets = nil, nil
	if err := WriteReport(dir, loaded, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	report := checkOutputs(t, dir, []string{
		"timeline-baseline.png", "timeline-off.png", "timeline-on.png",
		"cdf-ts.png", "cdf-noise.png", "percentiles-ts.png", "throughput-noise.png",
	})
	for _, want := range []string{
		"# tierdb bench: canned",
		"Test CPU",
		"| p50 70% lower | on | 9994 µs vs 49.9 ms: −80% | ≥ 70% lower | **PASS** |",
		"| p99.9 90% lower | on |",
		"**MISS**",
		"| noise drop | on | 70 ops/s during vs 100 before: −30% | ≤ 35% drop | **PASS** |",
		"| ts (high) | on |",
		"### Noise throughput around the time-sensitive phase",
		"| noise (low) | on | 100 | 70 | 100 | −30% | +0% |",
		"### Where the server side's time went",
		"IO:WALSync 25%",
		"### Each repetition",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(report)
	}
}

func TestReportWithoutPlots(t *testing.T) {
	dir := t.TempDir()
	res := cannedResults(t)
	if err := WriteReport(dir, res, ReportOptions{NoPlots: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, dir, nil)
	pngs, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(pngs) != 0 {
		t.Errorf("--no-plots wrote %v", pngs)
	}
}
