package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"tierdb/internal/bench/rig"
	"tierdb/internal/osprio"
	"tierdb/internal/pgmanage"
)

// TestSmokeEndToEnd runs the built-in smoke scenario in quick mode against
// a real PostgreSQL and a freshly built tierdb, and checks that every
// output exists and is well formed. It checks nothing about the timings.
func TestSmokeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and tierdb")
	}
	if _, err := pgmanage.FindBinaries(""); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tierdb")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "tierdb/cmd/tierdb")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sc, err := LoadScenario("smoke")
	if err != nil {
		t.Fatal(err)
	}
	// The split layout pins this process; put it back afterwards so the
	// other tests keep every CPU.
	was, err := osprio.Affinity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restoreAffinity(was) })
	layout := LayoutOptions{Mode: LayoutSplit}
	if len(was) < 2 {
		layout.Mode = LayoutShared
	}

	out := t.TempDir()
	res, err := Run(ctx, Options{Scenario: sc, OutDir: out, Tierdb: bin, Quick: true, Layout: layout, Command: "go test", CPUProfile: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Runs); got != 3 {
		t.Errorf("%d runs, want baseline, off and on-t1", got)
	}
	for _, r := range res.Runs {
		for _, g := range r.Groups {
			if g.Ops == 0 || g.Errors != 0 || g.Latency.Count() != uint64(g.Ops) {
				t.Errorf("%s %s: %d ops, %d errors (%s)", r.Variant, g.Name, g.Ops, g.Errors, g.FirstError)
			}
		}
		if r.Variant == "on-t1" && len(r.QoSStatus) == 0 {
			t.Error("no qosStatus from the QoS-on run")
		}
		if len(r.Diagnostics.Tierdb) == 0 {
			t.Errorf("%s: no request metrics from tierdb", r.Variant)
		}
		if r.Server.TierdbAllocBytes <= 0 {
			t.Errorf("%s: tierdb allocated %v bytes over the run", r.Variant, r.Server.TierdbAllocBytes)
		}
		if fi, err := os.Stat(filepath.Join(out, "logs", "rep1-"+r.Variant+".cpu.pb.gz")); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no CPU profile (%v)", r.Variant, err)
		}
	}
	checkOutputs(t, out, []string{
		"timeline-baseline.png", "timeline-off.png", "timeline-on-t1.png",
		"cdf-ts.png", "cdf-noise.png", "percentiles-ts.png", "throughput-noise.png",
	})
	for _, log := range []string{"load.log", "rep1-baseline.log", "rep1-off.log", "rep1-on-t1.log"} {
		if _, err := os.Stat(filepath.Join(out, "logs", log)); err != nil {
			t.Error(err)
		}
	}
}

// restoreAffinity gives every thread of this process the CPUs it had.
func restoreAffinity(cpus []int) error {
	tids, err := rig.ThreadIDs(os.Getpid())
	if err != nil {
		return err
	}
	for _, tid := range tids {
		_ = osprio.SetAffinity(tid, cpus)
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}

// replSmoke is a few seconds of replicated traffic: YCSB-B reads routed
// adaptively and an S workload bounded at 1 s, on a primary and one
// standby.
const replSmoke = `
name: repl-smoke
records: 300
replicas: 1
period: 1s
groups:
  - name: reads
    clients: 2
    tier: normal
    mix: {read: 0.95, update: 0.05}
    duration: 3s
  - name: s
    kind: staleness
    clients: 1
    tier: normal
    mode: rate
    rate: 100
    readPreference: {mode: adaptive, maxStalenessMS: 1000}
    duration: 3s
variants:
  - {name: secondary, qos: "off", readPreference: {mode: secondary}}
  - {name: adaptive, qos: "off", readPreference: {mode: adaptive, maxStalenessMS: 1000}, args: [--balance-period, 1s]}
targets:
  - {name: bounded, variant: adaptive, group: s, maxViolations: 0}
`

// TestReplSmokeEndToEnd runs replSmoke against a real primary and standby
// and checks the replication outputs: reads served by the standby, the S
// workload's figures, the per-period series and plots.
func TestReplSmokeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and tierdb")
	}
	if _, err := pgmanage.FindBinaries(""); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tierdb")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "tierdb/cmd/tierdb")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sc, err := ParseScenario(strings.NewReader(replSmoke))
	if err != nil {
		t.Fatal(err)
	}
	was, err := osprio.Affinity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restoreAffinity(was) })
	layout := LayoutOptions{Mode: LayoutSplit}
	if len(was) < 2 {
		layout.Mode = LayoutShared
	}
	out := t.TempDir()
	res, err := Run(ctx, Options{Scenario: sc, OutDir: out, Tierdb: bin, Layout: layout, Command: "go test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want secondary and adaptive", len(res.Runs))
	}
	for _, r := range res.Runs {
		if len(r.Repl) < 2 || len(r.Periods) == 0 || len(r.ReplStatus) == 0 {
			t.Errorf("%s: %d polls, %d periods, status %d bytes", r.Variant, len(r.Repl), len(r.Periods), len(r.ReplStatus))
		}
		for _, g := range r.Groups {
			if g.Ops == 0 || g.Errors != 0 {
				t.Errorf("%s %s: %d ops, %d errors (%s)", r.Variant, g.Name, g.Ops, g.Errors, g.FirstError)
			}
			if g.Name == "s" && (g.Staleness == nil || g.Staleness.Reads == 0 || g.Staleness.Writes == 0) {
				t.Errorf("%s: no staleness figures: %+v", r.Variant, g.Staleness)
			}
		}
		// Secondary reads must be served by the standby, per tierdb's
		// own counts.
		if share := standbyShare(r.Repl); r.Variant == "secondary" && share < 0.5 {
			t.Errorf("secondary run: %.0f%% of reads on the standby", 100*share)
		}
	}
	checkOutputs(t, out, []string{"repl-throughput.png", "repl-p80.png", "repl-standbys.png", "repl-fraction.png"})
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Replication", "Client-observed staleness", "Per period", "1 hot standby,"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
