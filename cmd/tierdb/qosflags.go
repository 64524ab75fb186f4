package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"tierdb/internal/osprio"
	"tierdb/internal/qos"
	"tierdb/internal/tierctl"
)

// qosFlags are the serve flags that make up a qos.Config.
type qosFlags struct {
	mode         string
	threshold    int
	guard        time.Duration
	anticipation time.Duration
	nice         string
	slice        string
	io           string
	pools        string
	fair         qos.FairConfig
	// inherit is the poll interval of priority inheritance (0: off).
	inherit time.Duration
	// parallelism is --parallelism as given: a number, or auto.
	parallelism string
	auto        bool
	// fairAnticipation is --fair-anticipation as given: a duration, or auto.
	fairAnticipation string
}

func (q *qosFlags) register(fs *flag.FlagSet) {
	d := qos.DefaultConfig()
	fs.StringVar(&q.mode, "qos", "on", "on: priority channel and OS priorities per tier; off: none of it in the request path")
	fs.IntVar(&q.threshold, "threshold", d.Threshold, "activation threshold of the priority channel (≥ 1)")
	fs.DurationVar(&q.guard, "starvation-guard", 0, "admit at least one waiting lower-tier request per interval (0: off)")
	fs.DurationVar(&q.anticipation, "anticipation", d.Anticipation, "keep lower tiers held this long after the last high-tier request ends, for that client's next request (0: off, the paper's channel)")
	fs.StringVar(&q.nice, "nice", fmt.Sprintf("high=%d,normal=%d,low=%d", d.Nice[qos.High], d.Nice[qos.Normal], d.Nice[qos.Low]), "nice level of each tier's PostgreSQL backends (a normal or low level above 0 applies only while the high tier is active; until then they run at 0)")
	fs.StringVar(&q.slice, "slice", "high=auto,normal=0,low=0", "CPU time slice of each tier's PostgreSQL backends, and the high tier's for tierdb's own threads (Linux 6.12 and later): a backend with a shorter slice than the running task's preempts it as soon as it wakes (0: the kernel's default; high=auto: 100us while other programs keep the server's CPUs busy and the high tier's backends wait long for one, the kernel's default otherwise)")
	fs.StringVar(&q.io, "io-priority", fmt.Sprintf("background=%s,walwriter=%s,high=%s,normal=%s,low=%s", d.IO.Background, d.IO.WALWriter, d.IO.Tiers[qos.High], d.IO.Tiers[qos.Normal], d.IO.Tiers[qos.Low]), "I/O priority of PostgreSQL's background processes (checkpointer, background writer, autovacuum), its WAL path (WAL writer, senders, receivers, standby replay), and each tier's backends")
	fs.StringVar(&q.pools, "cpu-pools", "", `CPU pools, e.g. "priority=0-1;standard=0-1;restricted=1" (empty: no pools)`)
	fs.StringVar(&q.parallelism, "parallelism", "auto", "P: the most requests of all tiers in PostgreSQL at once; users of a tier share it fairly when it is reached (auto: no limit until tierdb has found P itself under sustained load shared by two or more users, and again every 10 minutes of it; a number: that limit; 0: no limit)")
	fs.IntVar(&q.fair.Restricted, "restricted", 1, "how many normal and low requests may be in PostgreSQL while the high tier is active (0: no restriction)")
	fs.DurationVar(&q.fair.HighHold, "restricted-hold", d.Fair.HighHold, "the high tier stays active for --restricted this long after its last request ends")
	fs.StringVar(&q.fairAnticipation, "fair-anticipation", "auto", "how long a fair-share round may wait, with slots free, for a user that has quota left and a request in process or just ended (auto: as long as the tier's users need to stay within --fair-unfairness, up to 2ms, found per tier; a duration: that long; 0: never, rounds are then work-conserving)")
	fs.Float64Var(&q.fair.UnfairnessBound, "fair-unfairness", d.Fair.UnfairnessBound, "U_f bound of the fair-share round quota control")
	fs.Float64Var(&q.fair.CVBound, "fair-cv", d.Fair.CVBound, "latency CV bound of the fair-share round quota control")
	fs.DurationVar(&q.inherit, "priority-inheritance", 0, "once the high tier has been busy without a pause for half this long, ask PostgreSQL (at most this often) whom its requests wait for and give those backends the high tier's priorities (0: off)")
}

func (q *qosFlags) config() (qos.Config, error) {
	c := qos.DefaultConfig()
	switch q.mode {
	case "on":
	case "off":
		c.Enabled = false
		return c, nil
	default:
		return c, fmt.Errorf("--qos must be on or off, got %q", q.mode)
	}
	c.Threshold = q.threshold
	c.Fair = q.fair
	if q.auto = q.parallelism == "auto"; !q.auto {
		p, err := strconv.Atoi(q.parallelism)
		if err != nil || p < 0 {
			return c, fmt.Errorf("--parallelism must be a number ≥ 0 or auto, got %q", q.parallelism)
		}
		c.Fair.Parallelism = p
	}
	if c.Fair.AutoAnticipation = q.fairAnticipation == "auto"; !c.Fair.AutoAnticipation {
		d, err := time.ParseDuration(q.fairAnticipation)
		if err != nil || d < 0 {
			return c, fmt.Errorf("--fair-anticipation must be a duration ≥ 0 (e.g. 250us) or auto, got %q", q.fairAnticipation)
		}
		c.Fair.Anticipation = d
	}
	c.StarvationGuard = q.guard
	c.Anticipation = q.anticipation
	err := eachPair(q.nice, ",", func(k, v string) error {
		t, ok := qos.ParseTier(k)
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return fmt.Errorf("--nice wants high=N,normal=N,low=N; got %q", q.nice)
		}
		c.Nice[t] = n
		return nil
	})
	if err == nil {
		err = eachPair(q.slice, ",", func(k, v string) error {
			t, ok := qos.ParseTier(k)
			if ok && t == qos.High {
				c.SliceAuto = v == "auto"
				if c.SliceAuto {
					c.Slice[t] = 0
					return nil
				}
			}
			d, err := time.ParseDuration(v)
			if !ok || err != nil {
				return fmt.Errorf("--slice wants high=D,normal=D,low=D with durations such as 100us or 0 (high may be auto); got %q", q.slice)
			}
			c.Slice[t] = d
			return nil
		})
	}
	if err == nil {
		err = eachPair(q.io, ",", func(k, v string) error {
			p, err := qos.ParseIOPrio(v)
			if err != nil {
				return fmt.Errorf("--io-priority %s: %w", k, err)
			}
			switch k {
			case "background":
				c.IO.Background = p
				return nil
			case "walwriter":
				c.IO.WALWriter = p
				return nil
			}
			t, ok := qos.ParseTier(k)
			if !ok {
				return fmt.Errorf("--io-priority keys are background, walwriter, high, normal, low; got %q", k)
			}
			c.IO.Tiers[t] = p
			return nil
		})
	}
	if err == nil {
		err = eachPair(q.pools, ";", func(k, v string) error {
			set, err := osprio.ParseCPUList(v)
			if err != nil {
				return fmt.Errorf("--cpu-pools %s: %w", k, err)
			}
			switch k {
			case "priority":
				c.Pools.Priority = set
			case "standard":
				c.Pools.Standard = set
			case "restricted":
				c.Pools.Restricted = set
			default:
				return fmt.Errorf("--cpu-pools keys are priority, standard, restricted; got %q", k)
			}
			return nil
		})
	}
	if err != nil {
		return c, err
	}
	return c, tierctl.Validate(c)
}

func eachPair(s, sep string, fn func(k, v string) error) error {
	for _, part := range strings.Split(s, sep) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("expected key=value, got %q", part)
		}
		if err := fn(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return nil
}

// parseFlags parses the command line, and before it the --config file if one
// is named, so that flags given on the command line override the file.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	path := fs.Lookup("config").Value.String()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	return applyConfig(fs, path, b)
}

// applyConfig sets the flags a YAML config file names (keys are flag
// names, values what the command line would take), except those given on
// the command line. An unknown key is refused, so that a misspelt setting
// is not silently ignored.
func applyConfig(fs *flag.FlagSet, path string, b []byte) error {
	// Nodes rather than decoded values: a scalar is taken as written
	// ("10m", "0700", "on"), not as YAML's guess at its type.
	var values map[string]yaml.Node
	if err := yaml.Unmarshal(b, &values); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error is the same on every run
	for _, k := range keys {
		v := values[k]
		if fs.Lookup(k) == nil || k == "config" {
			return fmt.Errorf("--config %s: line %d: unknown setting %q (keys are the flag names of tierdb serve, without dashes; see deploy/tierdb.yaml)", path, v.Line, k)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("--config %s: line %d: %s: want a single value, as on the command line", path, v.Line, k)
		}
		if given[k] {
			continue
		}
		val := v.Value
		if v.Tag == "!!null" {
			val = ""
		}
		if err := fs.Set(k, val); err != nil {
			return fmt.Errorf("--config %s: line %d: %s: %w", path, v.Line, k, err)
		}
	}
	return nil
}

// adjustSLOs runs the latency-objective controller once a second.
func adjustSLOs(ctx context.Context, m *tierctl.Manager) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.AdjustSLOs()
		}
	}
}

// keepBackgroundIO re-applies the background processes' I/O priority now
// and then, so that processes PostgreSQL restarts get it too (the applier
// makes no system call for what is already set).
func keepBackgroundIO(ctx context.Context, ctrl *tierctl.Controller) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		ctrl.ApplyBackground()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// backendSizes is each tier's pool size: def, overridden per tier by spec
// ("high=8,normal=8,low=2").
func backendSizes(def int, spec string) ([qos.NumTiers]int, error) {
	var sizes [qos.NumTiers]int
	for t := range sizes {
		sizes[t] = def
	}
	err := eachPair(spec, ",", func(k, v string) error {
		t, ok := qos.ParseTier(k)
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 1 || n > 64 {
			return fmt.Errorf("--backends wants tier=N with N in 1-64 for high, normal, low; got %q", spec)
		}
		sizes[t] = n
		return nil
	})
	if def < 1 || def > 64 {
		return sizes, fmt.Errorf("--backends-per-tier must be 1-64, got %d", def)
	}
	return sizes, err
}
