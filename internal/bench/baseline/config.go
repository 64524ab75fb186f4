package baseline

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// config is the command line, after validation.
type config struct {
	tierdbBin  string
	tierdbArgs []string
	records    int
	clients    int
	duration   time.Duration
	warmup     time.Duration
	rounds     int
	ops        []opKind
	pin        bool
	outDir     string
	// monitoring is the driver's serverMonitoringMode (auto, poll or
	// stream).
	monitoring string
}

func parseFlags(args []string) (config, error) {
	var c config
	var ops, extra string
	fs := flag.NewFlagSet("tierdb-bench baseline", flag.ContinueOnError)
	fs.StringVar(&c.tierdbBin, "tierdb", "", "tierdb binary to benchmark (default: the tierdb next to tierdb-bench, else ./bin/tierdb, else on $PATH)")
	fs.StringVar(&extra, "tierdb-args", "", "extra arguments for \"tierdb serve\", space-separated")
	fs.IntVar(&c.records, "records", 10000, "records preloaded into each target")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients, each with its own connection")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time of each (operation, target) run")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before each run")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each runs every operation on both targets, and the report takes the median")
	fs.StringVar(&ops, "ops", joinOps(allOps()), "comma-separated operations to run")
	fs.BoolVar(&c.pin, "pin", true, "pin the servers to CPU 1 and this load generator to CPU 0")
	fs.StringVar(&c.outDir, "out", "bench-results", "directory for baseline.md and baseline.json")
	fs.StringVar(&c.monitoring, "server-monitoring", "poll",
		"the driver's serverMonitoringMode: auto, poll or stream. poll sends a hello every heartbeat (10 s); "+
			"stream (auto's choice outside FaaS) keeps an awaitable hello waiting on a connection of its own, "+
			"which tierdb answers when maxAwaitTimeMS is up")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: tierdb-bench baseline [flags]

Measures what tierdb costs on top of the PostgreSQL it stores data in: find,
insert and update by _id, and updates of one hot document by every client,
through tierdb with the MongoDB Go driver, against the same operations as
SQL with pgx straight on the same PostgreSQL. Writes
baseline.md and baseline.json into --out (see docs/benchmarks.md).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.tierdbArgs = strings.Fields(extra)
	var err error
	if c.ops, err = parseOps(ops); err != nil {
		return c, err
	}
	switch {
	case c.records < 1:
		return c, errors.New("--records must be at least 1")
	case c.clients < 1:
		return c, errors.New("--clients must be at least 1")
	case c.duration <= 0 || c.warmup < 0:
		return c, errors.New("--duration must be positive and --warmup not negative")
	case c.rounds < 1:
		return c, errors.New("--rounds must be at least 1")
	case !slices.Contains([]string{"auto", "poll", "stream"}, c.monitoring):
		return c, fmt.Errorf("--server-monitoring must be auto, poll or stream, not %q", c.monitoring)
	}
	return c, nil
}

func parseOps(s string) ([]opKind, error) {
	var ops []opKind
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(allOps(), func(k opKind) bool { return k.String() == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown operation %q (have %s)", name, joinOps(allOps()))
		}
		if !slices.Contains(ops, allOps()[i]) {
			ops = append(ops, allOps()[i])
		}
	}
	return ops, nil
}

func joinOps(ops []opKind) string {
	names := make([]string, len(ops))
	for i, k := range ops {
		names[i] = k.String()
	}
	return strings.Join(names, ",")
}
