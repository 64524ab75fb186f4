package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/buildinfo"
	"tierdb/internal/pgmanage"
)

// Backups: `tierdb dump` runs pg_dump on tierdb's database and writes a
// manifest next to it; `tierdb restore` runs pg_restore into an empty
// tierdb database (a fresh data directory, or a server tierdb has never
// stored anything in) and checks what it restored against the manifest.
//
// A dump of a data directory whose tierdb is running goes through that
// server's socket (pg_dump reads one consistent snapshot; clients carry
// on). With tierdb stopped, dump starts the embedded PostgreSQL for the
// time of the dump. Restore never touches a running server: it refuses,
// so that it cannot replace the data under a tierdb that serves it.

const (
	manifestName   = "tierdb-backup.json"
	manifestFormat = "tierdb-backup/1"
	pgDumpDir      = "pgdump" // pg_dump's directory-format output inside the backup
)

// backupManifest describes a backup; it is written last, so a directory
// without one holds no complete backup.
type backupManifest struct {
	Format     string    `json:"format"`
	Created    time.Time `json:"created"`
	Tierdb     string    `json:"tierdb"`
	Commit     string    `json:"commit"`
	PostgreSQL string    `json:"postgresql"` // server_version of the source
	Source     string    `json:"source"`
	Online     bool      `json:"online"` // taken from a running tierdb's server
	// What the dump holds, counted in the snapshot pg_dump read.
	Counts backupCounts `json:"counts"`
}

type backupCounts struct {
	Collections int64 `json:"collections"`
	Indexes     int64 `json:"indexes"` // besides each collection's _id index
	Users       int64 `json:"users"`
	Roles       int64 `json:"roles"`
}

func (c backupCounts) String() string {
	return fmt.Sprintf("%d collections, %d secondary indexes, %d users, %d roles", c.Collections, c.Indexes, c.Users, c.Roles)
}

// backupFlags are the flags dump and restore share.
type backupFlags struct {
	dir         string // --out or --in
	configFile  string
	dataDir     string
	postgresURL string
	postgresBin string
	jobs        int
}

func (b *backupFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.configFile, "config", "", "tierdb serve's YAML config file: data-dir, postgres-url and postgres-bin are taken from it unless given here")
	fs.StringVar(&b.dataDir, "data-dir", "./tierdb-data", "tierdb's data directory (its embedded PostgreSQL)")
	fs.StringVar(&b.postgresURL, "postgres-url", "", "an external PostgreSQL's tierdb database instead of the embedded one")
	fs.StringVar(&b.postgresBin, "postgres-bin", "", "directory with the PostgreSQL binaries (default: those matching the cluster's version)")
	fs.IntVar(&b.jobs, "jobs", 2, "parallel pg_dump/pg_restore jobs")
}

// parse reads the command line, then the serve settings from --config
// for what the command line does not give.
func (b *backupFlags) parse(fs *flag.FlagSet, args []string, dirFlag string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	if b.dir == "" {
		return fmt.Errorf("--%s DIR is required", dirFlag)
	}
	if b.jobs < 1 {
		return errors.New("--jobs must be at least 1")
	}
	if b.configFile == "" {
		return nil
	}
	content, err := os.ReadFile(b.configFile)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var sf serveFlags
	sfs := sf.flagSet()
	if err := applyConfig(sfs, b.configFile, content); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, dst := range map[string]*string{"data-dir": &b.dataDir, "postgres-url": &b.postgresURL, "postgres-bin": &b.postgresBin} {
		if !given[name] {
			*dst = sfs.Lookup(name).Value.String()
		}
	}
	return nil
}

// backupTarget is the database a dump reads or a restore writes.
type backupTarget struct {
	conn   string // keyword/value or URL connection string
	binDir string // where pg_dump and pg_restore are looked for first
	desc   string
	online bool
	stop   func() error
}

// openTarget finds the database: an external one, the running server of
// the data directory, or the embedded cluster started for the occasion.
// A restore refuses a running server; a dump refuses a data directory that
// holds no cluster.
func openTarget(ctx context.Context, b *backupFlags, log *slog.Logger, restore bool) (*backupTarget, error) {
	if b.postgresURL != "" {
		bin, _ := pgmanage.FindBinaries(b.postgresBin)
		return &backupTarget{conn: b.postgresURL, binDir: bin, desc: "the PostgreSQL of --postgres-url", online: true, stop: func() error { return nil }}, nil
	}
	node, err := pgmanage.PrimaryNodeDir(b.dataDir)
	if err != nil {
		return nil, err
	}
	running, err := pgmanage.FindRunning(node)
	if err != nil {
		return nil, err
	}
	if running != nil {
		if restore {
			return nil, fmt.Errorf("PostgreSQL is running in %s (pid %d): is a tierdb serving it? "+
				"Restore into a stopped tierdb's data directory or, better, a fresh one (--data-dir), then start tierdb on it", node, running.PID)
		}
		bin, err := pgmanage.BinariesFor(ctx, node, b.postgresBin, log)
		if err != nil {
			return nil, err
		}
		return &backupTarget{conn: running.ConnString, binDir: bin, online: true, stop: func() error { return nil },
			desc: fmt.Sprintf("the running server of %s (pid %d)", node, running.PID)}, nil
	}
	if !restore && !pgmanage.Initialized(node) {
		return nil, fmt.Errorf("no tierdb data in %s (no PostgreSQL cluster in %s)", b.dataDir, filepath.Join(node, "pg"))
	}
	log.Info("starting the embedded PostgreSQL for the "+map[bool]string{false: "dump", true: "restore"}[restore], "dir", node)
	c, err := pgmanage.Start(ctx, pgmanage.Options{DataDir: node, BinDir: b.postgresBin, Logger: log, ClusterName: "tierdb-" + map[bool]string{false: "dump", true: "restore"}[restore]})
	if err != nil {
		return nil, err
	}
	return &backupTarget{conn: c.ConnString(), binDir: c.BinDir(), desc: node, stop: func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return c.Stop(sctx)
	}}, nil
}

// pgTool is binDir's tool when it has it, else the one on PATH.
func pgTool(binDir, name string) (string, error) {
	if binDir != "" {
		p := filepath.Join(binDir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found in %s nor on PATH: install PostgreSQL's client programs (Debian: postgresql-client)", name, binDir)
	}
	return p, nil
}

// runTool runs a PostgreSQL tool with tierdb's environment minus the PG*
// variables (the connection string says everything), its output on ours.
func runTool(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// countContents counts what tierdb keeps in the database q reads.
func countContents(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (backupCounts, error) {
	var c backupCounts
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass('tierdb.collections') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return c, err
	}
	err := q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM tierdb.collections),
		(SELECT coalesce(sum(jsonb_array_length(indexes)), 0) FROM tierdb.collections),
		(SELECT count(*) FROM tierdb.users),
		(SELECT count(*) FROM tierdb.roles)`).Scan(&c.Collections, &c.Indexes, &c.Users, &c.Roles)
	return c, err
}

func backupLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// runDump is `tierdb dump`.
func runDump(args []string) error {
	var b backupFlags
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	fs.StringVar(&b.dir, "out", "", "directory to write the backup to (must not exist, or be empty)")
	b.register(fs)
	if err := b.parse(fs, args, "out"); err != nil {
		return err
	}
	if err := prepareOutDir(b.dir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := backupLogger()
	start := time.Now()
	t, err := openTarget(ctx, &b, log, false)
	if err != nil {
		return err
	}
	m, err := dump(ctx, t, &b, log)
	if serr := t.stop(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		os.RemoveAll(filepath.Join(b.dir, pgDumpDir))
		return err
	}
	fmt.Printf("dumped %s from %s to %s in %.1fs\n", m.Counts, t.desc, b.dir, time.Since(start).Seconds())
	return nil
}

func prepareOutDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700) // it will hold the users' SCRAM keys
	if errors.Is(err, os.ErrExist) {
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			return rerr
		}
		if len(entries) > 0 {
			return fmt.Errorf("--out %s is not empty: give a new directory for each backup", dir)
		}
		return nil
	}
	return err
}

// dump exports a snapshot, counts what it holds, has pg_dump write that
// same snapshot, then writes the manifest.
func dump(ctx context.Context, t *backupTarget, b *backupFlags, log *slog.Logger) (*backupManifest, error) {
	pgDump, err := pgTool(t.binDir, "pg_dump")
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, t.conn)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", t.desc, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	var snapshot, version string
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot(), current_setting('server_version')").Scan(&snapshot, &version); err != nil {
		return nil, err
	}
	counts, err := countContents(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("reading tierdb's catalog: %w", err)
	}
	log.Info("running pg_dump", "source", t.desc, "tool", pgDump, "jobs", b.jobs)
	if err := runTool(ctx, pgDump, "--format=directory", fmt.Sprintf("--jobs=%d", b.jobs), "--snapshot="+snapshot,
		"--file="+filepath.Join(b.dir, pgDumpDir), "--dbname="+t.conn); err != nil {
		return nil, err
	}
	bi := buildinfo.Read()
	m := &backupManifest{Format: manifestFormat, Created: time.Now().UTC().Truncate(time.Second), Tierdb: bi.Version, Commit: bi.ShortCommit(),
		PostgreSQL: version, Source: t.desc, Online: t.online, Counts: counts}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(b.dir, manifestName), append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return m, nil
}

// runRestore is `tierdb restore`.
func runRestore(args []string) error {
	var b backupFlags
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.StringVar(&b.dir, "in", "", "directory of a backup made by tierdb dump")
	b.register(fs)
	if err := b.parse(fs, args, "in"); err != nil {
		return err
	}
	m, err := readManifest(b.dir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := backupLogger()
	start := time.Now()
	t, err := openTarget(ctx, &b, log, true)
	if err != nil {
		return err
	}
	err = restore(ctx, t, &b, m, log)
	if serr := t.stop(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	fmt.Printf("restored %s (dumped %s from PostgreSQL %s) into %s in %.1fs\n", m.Counts, m.Created.Format(time.RFC3339), m.PostgreSQL, t.desc, time.Since(start).Seconds())
	return nil
}

func readManifest(dir string) (*backupManifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no complete tierdb backup (no %s)", dir, manifestName)
	}
	if err != nil {
		return nil, err
	}
	var m backupManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, manifestName), err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("%s: format %q, this tierdb reads %q", filepath.Join(dir, manifestName), m.Format, manifestFormat)
	}
	return &m, nil
}

// restore checks that the target holds nothing of tierdb's, runs
// pg_restore, compares what arrived with the manifest and refreshes the
// planner's statistics (a dump has none).
func restore(ctx context.Context, t *backupTarget, b *backupFlags, m *backupManifest, log *slog.Logger) error {
	pgRestore, err := pgTool(t.binDir, "pg_restore")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, t.conn)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", t.desc, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	have, err := countContents(ctx, conn)
	if err != nil {
		return err
	}
	if have != (backupCounts{}) {
		return fmt.Errorf("%s already holds tierdb data (%s); restore into a fresh --data-dir, or an empty database", t.desc, have)
	}
	// A tierdb that started once and stored nothing created its empty
	// schemas; the dump brings its own.
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS tierdb_data CASCADE; DROP SCHEMA IF EXISTS tierdb CASCADE"); err != nil {
		return err
	}
	log.Info("running pg_restore", "target", t.desc, "tool", pgRestore, "jobs", b.jobs)
	if err := runTool(ctx, pgRestore, "--format=directory", fmt.Sprintf("--jobs=%d", b.jobs), "--exit-on-error",
		"--no-owner", "--no-privileges", "--dbname="+t.conn, filepath.Join(b.dir, pgDumpDir)); err != nil {
		return err
	}
	got, err := countContents(ctx, conn)
	if err != nil {
		return err
	}
	if got != m.Counts {
		return fmt.Errorf("restored %s, but the backup's manifest says %s", got, m.Counts)
	}
	log.Info("analyzing the restored tables")
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return err
	}
	return nil
}
