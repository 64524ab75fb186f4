package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"tierdb/internal/commands"
	"tierdb/internal/gctune"
	"tierdb/internal/pgmanage"
	"tierdb/internal/qos"
	"tierdb/internal/server"
	"tierdb/internal/storage"
	"tierdb/internal/tierctl"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		return
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "tierdb:", err)
			os.Exit(1)
		}
	case "bench":
		// The harness is its own binary, so that the server links none of it.
		fmt.Fprintln(os.Stderr, "tierdb: the benchmark harness is a separate binary now: run tierdb-bench (make build puts it in bin/tierdb-bench), e.g. \"bin/tierdb-bench --quick smoke\" or \"bin/tierdb-bench -h\"")
		os.Exit(2)
	case "dump", "restore":
		run := runDump
		if os.Args[1] == "restore" {
			run = runRestore
		}
		if err := run(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "tierdb:", err)
			os.Exit(1)
		}
	case "version":
		if err := runVersion(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "tierdb:", err)
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "tierdb: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `tierdb: a MongoDB-compatible document database on PostgreSQL, with performance tiers.

Usage:
  tierdb serve [flags]    run the server; "tierdb serve -h" lists the flags
  tierdb dump --out DIR [--data-dir DIR | --config FILE]
                          back up tierdb's database with pg_dump (also while tierdb runs)
  tierdb restore --in DIR [--data-dir DIR | --config FILE]
                          restore a backup into a fresh data directory (tierdb stopped)
  tierdb version [--postgres-bin DIR]
                          tierdb's version and commit, Go, MongoDB wire and PostgreSQL versions

The benchmark harness is a separate binary, tierdb-bench ("tierdb-bench -h").
`)
}

type serveFlags struct {
	configFile      string
	listen          string
	dataDir         string
	postgresURL     string
	postgresBin     string
	backendsPerTier int
	backends        string
	versionCacheMB  int
	cursorTimeout   time.Duration
	sessionTimeout  time.Duration
	frameTimeout    time.Duration
	idleTimeout     time.Duration
	maxIncomingMB   int64
	txnLifetime     time.Duration
	ttlInterval     time.Duration
	logLevel        string
	logFormat       string
	slowMS          int
	testCommands    bool
	metricsListen   string
	pprof           bool
	gcDefer         bool
	qos             qosFlags
	repl            replFlags
	auth            authFlags
}

func serve(args []string) error {
	var f serveFlags
	fs := f.flagSet()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return f.run()
}

// flagSet defines every flag of serve, bound to f (deploy/tierdb.yaml lists
// them all; cmd/tierdb/config_test.go checks that it does).
func (f *serveFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:27017", "address to accept MongoDB clients on")
	fs.StringVar(&f.dataDir, "data-dir", "./tierdb-data", "data directory of the embedded PostgreSQL")
	fs.StringVar(&f.postgresURL, "postgres-url", "", "use this PostgreSQL instead of the embedded one (e.g. postgres://user@host/db)")
	fs.StringVar(&f.postgresBin, "postgres-bin", "", "directory with the PostgreSQL binaries (default: found with pg_config or under /usr/lib/postgresql)")
	fs.IntVar(&f.versionCacheMB, "version-cache-mb", 64, "memory for last-written document versions, which let updates by _id run as one statement (0: off)")
	fs.IntVar(&f.backendsPerTier, "backends-per-tier", 8, "PostgreSQL backends in each tier's pool")
	fs.StringVar(&f.backends, "backends", "", `per-tier pool sizes overriding --backends-per-tier, e.g. "high=8,normal=8,low=2"`)
	fs.DurationVar(&f.cursorTimeout, "cursor-timeout", 10*time.Minute, "close cursors idle for longer than this")
	fs.DurationVar(&f.frameTimeout, "frame-timeout", time.Minute, "close a connection whose message has started but not arrived whole within this time (0: never)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 30*time.Minute, "close a connection that sent nothing, with no request running, for this long (0: never)")
	fs.Int64Var(&f.maxIncomingMB, "max-incoming-mb", 256, "MiB that all connections together may hold in messages still arriving, beyond each one's first MiB; past it the message is refused and its connection closed (0: no bound)")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", 30*time.Minute, "forget logical sessions (and their retryable writes' records) idle for longer than this (logicalSessionTimeoutMinutes)")
	fs.DurationVar(&f.ttlInterval, "ttl-monitor-interval", 60*time.Second, "time between two passes of the TTL monitor, which deletes expired documents of TTL indexes as low-tier work (ttlMonitorSleepSecs); 0 turns it off")
	fs.DurationVar(&f.txnLifetime, "transaction-lifetime", 60*time.Second, "abort transactions open for longer than this and free their backend (transactionLifetimeLimitSeconds)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text (key=value lines) or json (one JSON object a line)")
	fs.IntVar(&f.slowMS, "slow-ms", 100, "log operations that take longer than this many milliseconds (user, tier, command, namespace, duration, plan summary; never document contents) and list them on the status page (0: off)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics (/metrics), the status page (/) and health checks (/healthz, /readyz) on this address, e.g. 127.0.0.1:9216 (empty: off)")
	fs.BoolVar(&f.pprof, "pprof", false, "also serve Go profiles under /debug/pprof/ on --metrics-listen")
	fs.BoolVar(&f.gcDefer, "gc-defer", true, "while the high tier is active and for a second after, let Go's collector wait for up to 512 MiB of garbage instead of 128 MiB: a shorter high-tier tail for more memory and the CPU of touching it (false: the usual pacing always; ignored with GOGC set or --qos=off)")
	fs.BoolVar(&f.testCommands, "enable-test-commands", false, "enable commands for tests (sleep)")
	fs.StringVar(&f.configFile, "config", "", "YAML file of flag values (keys are flag names); flags given on the command line win")
	f.qos.register(fs)
	f.repl.register(fs)
	f.auth.register(fs)
	return fs
}

// run serves with the parsed flags until SIGINT or SIGTERM.
func (f *serveFlags) run() error {
	if err := f.repl.validate(f.postgresURL != ""); err != nil {
		return err
	}
	qcfg, err := f.qos.config()
	if err != nil {
		return err
	}
	tlsCfg, err := f.auth.tlsConfig()
	if err != nil {
		return err
	}
	backends := f.backends
	sizes, err := backendSizes(f.backendsPerTier, backends)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("bad --log-level: %w", err)
	}
	log, err := newLogger(f.logFormat, level)
	if err != nil {
		return err
	}
	if f.slowMS < 0 {
		return fmt.Errorf("bad --slow-ms %d: 0 turns the slow log off, more logs operations over that many milliseconds", f.slowMS)
	}

	// Rare collections: each is a burst of CPU that requests in flight
	// wait out (GOGC in the environment wins).
	gc := gctune.Start(gctune.DefaultHeadroom)
	if gc != nil {
		defer gc.Stop()
		log.Info("Go's collector lets the heap grow by a headroom past what is live (GOGC in the environment overrides)", "headroom_mib", gctune.DefaultHeadroom>>20)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	connString := f.postgresURL
	primary, standbys := storage.NodeConfig{Name: "primary"}, f.repl.standbyConfigs()
	// The embedded primary and its standbys, and their helper processes;
	// neither is known for an external PostgreSQL.
	var set *pgmanage.Set
	var backgroundProcs func() ([]pgmanage.BackgroundProcess, error)
	if connString == "" {
		log.Info("starting embedded PostgreSQL", "data_dir", f.dataDir, "replicas", f.repl.replicas)
		set, err = pgmanage.StartSet(ctx, pgmanage.Options{
			DataDir: f.dataDir,
			BinDir:  f.postgresBin,
			Logger:  log,
			// Every tier's pool, the monitor's, and room for walsenders and tools.
			MaxConnections: sizes[qos.High] + sizes[qos.Normal] + sizes[qos.Low] + 30,
		}, f.repl.replicas)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			if err := set.Stop(sctx); err != nil {
				log.Error("stopping PostgreSQL", "err", err)
			}
		}()
		primary, standbys = setNodeConfigs(set.Nodes())
		connString = primary.ConnString
		backgroundProcs = set.BackgroundProcesses
	}
	// An external PostgreSQL's helper processes are found through
	// pg_stat_activity once connected (tierctl only touches local ones).
	var external atomic.Pointer[storage.Store]
	if set == nil {
		backgroundProcs = func() ([]pgmanage.BackgroundProcess, error) {
			return externalHelpers(external.Load())
		}
	}

	// QoS: the priority channel gates requests, the controller sets the OS
	// treatment of each tier's backends. With --qos=off neither exists.
	var manager *tierctl.Manager
	applyBackground := func() {}
	storeOpts := storage.Options{ConnString: connString, PrimaryName: primary.Name, Standbys: standbys, Logger: log, VersionCacheBytes: f.versionCacheMB << 20}
	storeOpts.BackendsPerTier = sizes
	if qcfg.Enabled {
		ch, err := qos.NewChannel(qos.ChannelOptions{Threshold: qcfg.Threshold, StarvationGuard: qcfg.StarvationGuard, Anticipation: qcfg.Anticipation})
		if err != nil {
			return err
		}
		gate, err := qos.NewGate(qos.GateOptions{Parallelism: qcfg.Fair.Parallelism, Restricted: qcfg.Fair.Restricted, HighHold: qcfg.Fair.HighHold,
			Anticipation: qcfg.Fair.Anticipation, AutoAnticipation: qcfg.Fair.AutoAnticipation, UnfairnessBound: qcfg.Fair.UnfairnessBound, CVBound: qcfg.Fair.CVBound})
		if err != nil {
			return err
		}
		ctrl := tierctl.New(tierctl.Options{Logger: log, BackgroundProcesses: backgroundProcs}, qcfg)
		defer ctrl.Close()
		// Collections wait while the high tier is active (gctune); with
		// GOGC set there is no tuner and nothing to tell.
		var deferGC func(bool)
		if f.gcDefer && gc != nil {
			deferGC = gc.SetHighActive
		}
		manager = tierctl.NewManager(qcfg, ch, gate, ctrl, deferGC)
		storeOpts.OnBackendOpen = ctrl.BackendOpened
		storeOpts.OnBackendClose = ctrl.BackendClosed
		go keepBackgroundIO(ctx, ctrl)
		go adjustSLOs(ctx, manager)
		applyBackground = ctrl.ApplyBackground
		log.Info("QoS on", "threshold", qcfg.Threshold, "nice", qcfg.Nice, "cpu_pools", qcfg.Pools.Enabled(),
			"parallelism", qcfg.Fair.Parallelism, "restricted", qcfg.Fair.Restricted)
	} else {
		log.Info("QoS off: no admission control, no OS priorities")
	}
	store, err := storage.Open(ctx, storeOpts)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer store.Close()
	external.Store(store)
	applyBackground()
	if manager != nil && f.qos.inherit > 0 {
		go manager.Controller.Inherit(ctx, f.qos.inherit, store.LockHolders)
	}
	if manager != nil && f.qos.auto {
		maxP := store.MaxBackends()
		policy := qos.AutoCalibration{Every: 10 * time.Minute, Sustain: 2 * time.Second, Busy: max(2, maxP/4)}
		go manager.AutoCalibrate(ctx, policy, time.Second, maxP)
	}

	registry, err := setupAuth(ctx, log, store, f.listen, f.auth)
	if err != nil {
		return err
	}
	srv, err := server.Listen(server.Options{Listen: f.listen, Logger: log, TLS: tlsCfg,
		FrameTimeout: f.frameTimeout, IdleTimeout: f.idleTimeout, MaxIncomingBytes: f.maxIncomingMB << 20})
	if err != nil {
		return err
	}
	h := commands.New(commands.Options{
		Store:          store,
		Logger:         log,
		CursorTimeout:  f.cursorTimeout,
		SessionTimeout: f.sessionTimeout,
		TxnLifetime:    f.txnLifetime,
		TTLInterval:    ttlInterval(f.ttlInterval),
		Argv:           redactArgv(os.Args),
		Connections:    srv.Connections,
		Clients:        srv.Clients,
		QoS:            manager,
		TestCommands:   f.testCommands,
		Auth:           registry,
		Replication:    f.repl.startReplication(ctx, store, set, log),
		SlowThreshold:  time.Duration(f.slowMS) * time.Millisecond,
		GC:             gc,
	})
	defer h.Close()
	srv.SetHandlers(h)
	if f.metricsListen != "" {
		addr, err := serveMetrics(ctx, f.metricsListen, log, f.pprof, h)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		log.Info("metrics endpoint", "url", "http://"+addr.String()+"/metrics", "status_page", "http://"+addr.String()+"/")
	}

	log.Info("tierdb is ready", "listen", srv.Addr().String(), "tls", tlsCfg != nil, "auth", registry.Required())
	// The line above is what scripts and tests wait for; keep it stable.
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-served:
		if err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// externalHelpers lists an external PostgreSQL's helper processes for
// tierctl; nil before the store is connected.
func externalHelpers(store *storage.Store) ([]pgmanage.BackgroundProcess, error) {
	if store == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	procs, err := store.HelperProcesses(ctx)
	out := make([]pgmanage.BackgroundProcess, len(procs))
	for i, p := range procs {
		out[i] = pgmanage.BackgroundProcess{PID: p.PID, Title: p.Kind}
	}
	return out, err
}

// ttlInterval maps the flag's 0 (off) to the command layer's negative.
func ttlInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
