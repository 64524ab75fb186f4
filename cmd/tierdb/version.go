package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"tierdb/internal/buildinfo"
	"tierdb/internal/commands"
	"tierdb/internal/pgmanage"
)

// runVersion prints what this tierdb is: its version and commit, the Go
// toolchain, the MongoDB version and wire protocol it answers drivers
// with, and the PostgreSQL it would run as its embedded server.
func runVersion(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	bin := fs.String("postgres-bin", "", "directory with the PostgreSQL binaries (default: found with pg_config or under /usr/lib/postgresql, as serve finds them)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version takes no arguments, got %q", fs.Args())
	}
	writeVersion(os.Stdout, buildinfo.Read(), findPostgres(*bin))
	return nil
}

// pgFound is the PostgreSQL installation tierdb would use.
type pgFound struct {
	Version string // "15.8 (Debian 15.8-0+deb12u1)"; "" when not found
	BinDir  string
	Err     error // why it was not found
}

// findPostgres looks for the server binaries as serve does and asks
// postgres for its version.
func findPostgres(override string) pgFound {
	dir, err := pgmanage.FindBinaries(override)
	if err != nil {
		return pgFound{Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return pgFound{BinDir: dir, Err: fmt.Errorf("%s --version: %w", filepath.Join(dir, "postgres"), err)}
	}
	return pgFound{Version: parsePostgresVersion(string(out)), BinDir: dir}
}

// parsePostgresVersion turns "postgres (PostgreSQL) 15.8 (Debian ...)"
// into "15.8 (Debian ...)".
func parsePostgresVersion(out string) string {
	out = strings.TrimSpace(out)
	if _, rest, ok := strings.Cut(out, "(PostgreSQL) "); ok {
		return rest
	}
	return out
}

// writeVersion prints one summary line (scripts and benchmark reports
// keep it), then one line per component.
func writeVersion(w io.Writer, bi buildinfo.Info, pg pgFound) {
	fmt.Fprintf(w, "tierdb %s (commit %s, %s)\n", bi.Version, bi.ShortCommit(), bi.GoVersion)
	commit := "unknown (built without VCS information: build from a git checkout with `make build`)"
	if bi.Revision != "" {
		commit = bi.Revision
		if bi.Modified {
			commit += " with uncommitted changes"
		}
		if bi.CommitTime != "" {
			commit += ", committed " + bi.CommitTime
		}
	}
	fmt.Fprintf(w, "commit:     %s\n", commit)
	fmt.Fprintf(w, "go:         %s %s\n", bi.GoVersion, bi.Platform)
	fmt.Fprintf(w, "mongodb:    %s-compatible, wire versions 0 to %d\n", commands.Version, commands.MaxWireVersion)
	switch {
	case pg.Version != "":
		fmt.Fprintf(w, "postgresql: %s, in %s\n", pg.Version, pg.BinDir)
	default:
		fmt.Fprintf(w, "postgresql: not found (%v)\n", pg.Err)
	}
}
