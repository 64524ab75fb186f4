package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tierdb/internal/bench"
)

// runScenario is `tierdb-bench [flags] <scenario>`: an experiment of the
// papers, QoS off against on (internal/bench).
func runScenario(args []string) error {
	fs := flag.NewFlagSet("tierdb-bench", flag.ContinueOnError)
	out := fs.String("out", "", "output directory (default bench-results/<scenario>-<timestamp>)")
	tierdbBin := fs.String("tierdb", "", "tierdb executable to run the servers from (default: the tierdb next to tierdb-bench, else ./bin/tierdb, else on $PATH)")
	repeat := fs.Int("repeat", 0, "repetitions (default: the scenario's)")
	layout := fs.String("layout", "", "split: servers and load generator on disjoint CPUs; shared: all on all CPUs (default: the scenario's, else split)")
	serverCPUs := fs.String("server-cpus", "", "with --layout split: the servers' CPUs, e.g. 1 or 2-3 (default: the last half)")
	serverCgroup := fs.Bool("server-cgroup", false, "run PostgreSQL and tierdb in one cgroup v1 cpu group of their own, without a quota, as systemd with CPU accounting or a container would (default: the scenario's serverCgroup)")
	pgQuota := fs.Float64("pg-cpu-quota", 0, "cap PostgreSQL at this many CPUs with a cgroup v1 quota, e.g. 0.5; with replicas, each node gets its own cgroup with this cap (0: the scenario's pgCPUQuota, else no cap)")
	quick := fs.Bool("quick", false, "shortened runs (one repetition, a quarter of every time span and operation count), for CI")
	noPlots := fs.Bool("no-plots", false, "skip the PNG plots")
	cpuProfile := fs.Duration("cpu-profile", 0, "take a CPU profile of tierdb this long in every run, from the end of the warm-up (tierdb gets --pprof), into logs/rep<N>-<variant>.cpu.pb.gz; keep it under the run's length")
	fromResults := fs.String("from-results", "", "rebuild the report from this results.json instead of running (into --out, default its directory), its targets evaluated afresh")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `tierdb-bench: tierdb's benchmark harness.

Usage:
  tierdb-bench [flags] <scenario>
  tierdb-bench baseline [flags]    tierdb against the same operations as SQL straight
                                   on its PostgreSQL; "tierdb-bench baseline -h" lists its flags

tierdb-bench <scenario> runs an experiment of the RT-MongoDB papers against tierdb
and writes results.json, summary.csv, report.md and plots. <scenario> is a built-in
scenario (%s) or a YAML file (see docs/benchmarks.md).

Flags:
`, strings.Join(bench.BuiltinScenarios(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}

	if *fromResults != "" {
		if fs.NArg() != 0 {
			return errors.New("--from-results takes no scenario")
		}
		res, err := bench.LoadResults(*fromResults)
		if err != nil {
			return err
		}
		if res.Summary != nil {
			res.Targets = bench.Evaluate(res.Scenario, res.Summary)
		}
		dir := *out
		if dir == "" {
			dir = filepath.Dir(*fromResults)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := bench.WriteReport(dir, res, bench.ReportOptions{NoPlots: *noPlots}); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(dir, "report.md"))
		return nil
	}

	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("name one scenario")
	}
	if fs.Arg(0) == "baseline" {
		return errors.New(`baseline is a subcommand with flags of its own: "tierdb-bench baseline [flags]"`)
	}
	sc, err := bench.LoadScenario(fs.Arg(0))
	if err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "server-cgroup" {
			sc.ServerCgroup = *serverCgroup // the flag wins over the scenario, either way
		}
	})
	if *out == "" {
		*out = filepath.Join("bench-results", sc.Name+"-"+time.Now().Format("20060102-150405"))
	}
	bin, err := bench.FindTierdb(*tierdbBin)
	if err != nil {
		return err
	}
	opts := bench.Options{
		Scenario:   sc,
		OutDir:     *out,
		Tierdb:     bin,
		Repeat:     *repeat,
		Quick:      *quick,
		Layout:     bench.LayoutOptions{Mode: *layout, ServerCPUs: *serverCPUs, PGCPUQuota: *pgQuota, ServerCgroup: *serverCgroup},
		NoPlots:    *noPlots,
		CPUProfile: *cpuProfile,
		Command:    bench.CommandLine("tierdb-bench", args),
		Stdout:     os.Stdout,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if isTerminal(os.Stderr) {
		opts.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = bench.Run(ctx, opts)
	if ctx.Err() != nil {
		return errors.New("interrupted; servers stopped")
	}
	return err
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
