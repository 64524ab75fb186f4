package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	os.Exit(mainCode())
}

// mainCode returns the exit status: 0 when every operation succeeded
// (whether or not the aims were met: missing one is a finding, not a
// crash), 1 on failures, 2 on a bad command line, 130 when interrupted.
func mainCode() int {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		return 2
	}
	if cfg.pin {
		if err := pinLoadGenerator(); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = benchmark(ctx, cfg)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "baseline: interrupted; servers stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "baseline:", err)
		return 1
	}
	return 0
}

func benchmark(ctx context.Context, cfg config) (err error) {
	rep := report{
		Command:     commandLine("go run ./bench/baseline", os.Args[1:]),
		MakeCommand: makeCommandLine(os.Args[1:]),
		Started:     time.Now().UTC().Truncate(time.Second),
		Machine:     describeMachine(),
		Tierdb:      tierdbVersion(cfg.tierdbBin),
		Settings: settings{
			Records: cfg.records, Clients: cfg.clients, Rounds: cfg.rounds, Pin: cfg.pin,
			Duration: cfg.duration.String(), Warmup: cfg.warmup.String(), TierdbArgs: cfg.tierdbArgs,
			ServerMonitoring: cfg.monitoring,
		},
	}
	fmt.Println("command:", rep.MakeCommand, "=", rep.Command)

	srv, err := startServers(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
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

// tierdbPath is the tierdb executable's absolute path, checked to exist.
func tierdbPath(bin string) (string, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("tierdb binary: %w (run `make build`, or pass --tierdb)", err)
	}
	return abs, nil
}

func tierdbVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "tierdb (version unknown)"
	}
	return strings.TrimSpace(string(out))
}

// commandLine renders argv the way a shell would accept it back.
func commandLine(prefix string, args []string) string {
	parts := []string{prefix}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func makeCommandLine(args []string) string {
	if len(args) == 0 {
		return "make bench-baseline"
	}
	return "make bench-baseline ARGS=" + shellQuote(commandLine("", args)[1:])
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:,+@%-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
