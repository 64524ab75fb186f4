package baseline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"tierdb/internal/bench"
	"tierdb/internal/bench/rig"
)

// Main runs `tierdb-bench baseline args...` and returns the exit status:
// 0 when every operation succeeded (whether or not the aims were met:
// missing one is a finding, not a crash), 1 on failures, 2 on a bad
// command line, 130 when interrupted.
func Main(args []string) int {
	cfg, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tierdb-bench baseline:", err)
		return 2
	}
	if cfg.pin {
		if err := pinLoadGenerator(); err != nil {
			fmt.Fprintln(os.Stderr, "tierdb-bench baseline:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = benchmark(ctx, cfg, args)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "tierdb-bench baseline: interrupted; servers stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "tierdb-bench baseline:", err)
		return 1
	}
	return 0
}

func benchmark(ctx context.Context, cfg config, args []string) (err error) {
	rep := report{
		Command:     bench.CommandLine("tierdb-bench baseline", args),
		MakeCommand: makeCommandLine(args),
		Started:     time.Now().UTC().Truncate(time.Second),
		Machine:     bench.DescribeMachine(),
		Settings: settings{
			Records: cfg.records, Clients: cfg.clients, Rounds: cfg.rounds, Pin: cfg.pin,
			Duration: cfg.duration.String(), Warmup: cfg.warmup.String(), TierdbArgs: cfg.tierdbArgs,
			ServerMonitoring: cfg.monitoring,
		},
	}
	bin, err := bench.FindTierdb(cfg.tierdbBin)
	if err != nil {
		return err
	}
	rep.Tierdb = bench.TierdbVersion(bin)
	fmt.Println("command:", rep.MakeCommand, "=", rep.Command)

	srv, err := startServers(ctx, bin, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "stopping tierdb and PostgreSQL")
		err = errors.Join(err, srv.stop())
	}()
	rep.Layout = srv.layout
	fmt.Println("layout:", rep.Layout)

	mongoT, err := newMongoTarget(ctx, srv.tierdb.Addr(), cfg.clients, cfg.monitoring)
	if err != nil {
		return err
	}
	defer mongoT.close(context.Background())
	sqlT, err := newSQLTarget(ctx, srv.pg.Cluster.ConnString(), cfg.clients)
	if err != nil {
		return err
	}
	defer sqlT.close(context.Background())
	if err := sqlT.pool.QueryRow(ctx, "SHOW server_version").Scan(&rep.PostgreSQL); err != nil {
		return err
	}

	targets := []target{mongoT, sqlT}
	nextID := map[target]*atomic.Int64{}
	for _, t := range targets {
		fmt.Fprintf(os.Stderr, "preloading %d records into %s\n", cfg.records, t.name())
		// The same seed gives both targets the same records.
		if err := t.preload(ctx, cfg.records, rand.New(rand.NewPCG(0, 0))); err != nil {
			return fmt.Errorf("preloading %s: %w", t.name(), err)
		}
		nextID[t] = &atomic.Int64{}
		nextID[t].Store(int64(cfg.records))
	}

	pr := probe{tierdbPID: srv.tierdb.PID(), postmasterPID: srv.pg.Cluster.PID()}
	for _, op := range cfg.ops {
		for round := 1; round <= cfg.rounds; round++ {
			for _, t := range targets {
				if srv.tierdb.Exited() {
					return fmt.Errorf("tierdb exited during the benchmark; its log:\n%s", srv.tierdb.LogTail())
				}
				r := runOnce(ctx, runSpec{
					op: op, target: t, round: round, clients: cfg.clients, records: cfg.records,
					warmup: cfg.warmup, duration: cfg.duration, nextID: nextID[t], probe: pr,
				})
				if ctx.Err() != nil {
					return ctx.Err()
				}
				printRun(r)
				rep.Runs = append(rep.Runs, r)
			}
		}
	}

	rep.Finished = time.Now().UTC().Truncate(time.Second)
	rep.Machine.LoadAvgEnd = rig.ReadLoadAvg()
	rep.Summary = summarize(rep.Runs, cfg.ops, serverCPU)
	fmt.Println()
	fmt.Print(rep.markdown())
	if err := rep.write(cfg.outDir); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s/baseline.md and %s/baseline.json\n", cfg.outDir, cfg.outDir)
	for _, s := range rep.Summary {
		if s.Errors > 0 {
			return fmt.Errorf("%d %s operations failed", s.Errors, s.Op)
		}
	}
	return nil
}

func printRun(r runResult) {
	fmt.Fprintf(os.Stderr, "round %d %-13s %-6s %8.0f ops/s  p50 %7.1f µs  p99 %8.1f µs  tierdb %5.1f + pg %5.1f µs CPU/op  CPU busy %v%%",
		r.Round, r.Op, r.Target, r.OpsPerSec, r.P50us, r.P99us, r.TierdbCPUusPerOp, r.PostgresCPUusPerOp, roundAll(r.CPUBusyPct))
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "  %d ERRORS, first: %s", r.Errors, r.FirstError)
	}
	fmt.Fprintln(os.Stderr)
}

func roundAll(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

func makeCommandLine(args []string) string {
	if len(args) == 0 {
		return "make bench-baseline"
	}
	return "make bench-baseline ARGS=" + bench.ShellQuote(bench.CommandLine("", args)[1:])
}
