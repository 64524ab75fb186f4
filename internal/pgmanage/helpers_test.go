package pgmanage

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMajorFromVersionOutput(t *testing.T) {
	for out, want := range map[string]string{
		"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n": "15",
		"postgres (PostgreSQL) 9.6.24\n":                         "9.6",
		"postgres (PostgreSQL) 18devel\n":                        "18",
		"postgres (PostgreSQL) 17beta1\n":                        "17",
	} {
		got, ok := majorFromVersionOutput(out)
		if !ok || got != want {
			t.Errorf("majorFromVersionOutput(%q) = %q, %v; want %q", out, got, ok, want)
		}
	}
	if got, ok := majorFromVersionOutput("garbage"); ok {
		t.Errorf("majorFromVersionOutput(garbage) = %q, true", got)
	}
}

func TestBinariesForClusterVersionMismatch(t *testing.T) {
	binDir, err := FindBinaries("")
	if err != nil {
		t.Fatal(err)
	}
	pgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(pgDir, "PG_VERSION"), []byte("9.6\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err = binariesForCluster(context.Background(), binDir, false, pgDir, logger)
	if err == nil || !strings.Contains(err.Error(), "created by PostgreSQL 9.6") || !strings.Contains(err.Error(), "pg_upgrade") {
		t.Errorf("err = %v, want a version mismatch explanation", err)
	}

	// A cluster of the binaries' own version needs no change.
	major, err := serverMajor(context.Background(), binDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pgDir, "PG_VERSION"), []byte(major+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := binariesForCluster(context.Background(), binDir, true, pgDir, logger)
	if err != nil || got != binDir {
		t.Errorf("binariesForCluster = %q, %v; want %q", got, err, binDir)
	}
}

func TestIsBackgroundTitle(t *testing.T) {
	for title, want := range map[string]bool{
		"postgres: tierdb: checkpointer":                         true,
		"postgres: tierdb: background writer":                    true,
		"postgres: tierdb: autovacuum launcher":                  true,
		"postgres: tierdb: logical replication launcher":         true,
		"postgres: walwriter":                                    true,
		"postgres: tierdb: postgres tierdb [local] idle":         false,
		"postgres: tierdb: parallel worker for PID 42":           false,
		"postgres: tierdb: postgres tierdb [local] checkpointer": false,
		"/usr/lib/postgresql/15/bin/postgres -D /x/pg":           false,
	} {
		if got := isBackgroundTitle(title, "tierdb"); got != want {
			t.Errorf("isBackgroundTitle(%q) = %v, want %v", title, got, want)
		}
	}
}

func TestBackgroundKindNamesTheProcess(t *testing.T) {
	for title, want := range map[string]string{
		"postgres: tierdb: walwriter":                                "walwriter",
		"postgres: tierdb: checkpointer":                             "checkpointer",
		"postgres: tierdb: logical replication worker for sub 16394": "logical replication worker",
	} {
		if got, ok := backgroundKind(title, "tierdb"); !ok || got != want {
			t.Errorf("backgroundKind(%q) = %q, %v; want %q", title, got, ok, want)
		}
	}
}

func TestQuoteConnValue(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/tierdb-pg-1": "/tmp/tierdb-pg-1",
		"/tmp/a b":         `'/tmp/a b'`,
		`/tmp/it's`:        `'/tmp/it\'s'`,
		"":                 "''",
	} {
		if got := quoteConnValue(in); got != want {
			t.Errorf("quoteConnValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServerSettings(t *testing.T) {
	opts, err := Options{DataDir: "/d", Settings: map[string]string{"fsync": "off", "work_mem": "8MB"}}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	s := serverSettings(opts, "/tmp/s")
	for name, want := range map[string]string{
		"fsync":                   "off", // Options.Settings win
		"work_mem":                "8MB",
		"listen_addresses":        "",
		"unix_socket_directories": "/tmp/s",
		"port":                    "5432",
		"max_connections":         "200",
		"shared_buffers":          "128MB",
		"synchronous_commit":      "on",
		"logging_collector":       "off",
	} {
		if got, ok := s[name]; !ok || got != want {
			t.Errorf("%s = %q (set: %v), want %q", name, got, ok, want)
		}
	}
	opts.Port = 6543
	if s := serverSettings(opts, "/tmp/s"); s["listen_addresses"] != "127.0.0.1" || s["port"] != "6543" {
		t.Errorf("with Port: listen_addresses=%q port=%q", s["listen_addresses"], s["port"])
	}

	args := serverArgs("/d/pg", map[string]string{"b": "2", "a": "1"})
	if want := []string{"-D", "/d/pg", "-c", "a=1", "-c", "b=2"}; !slices.Equal(args, want) {
		t.Errorf("serverArgs = %q, want %q", args, want)
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("lastLines = %q", got)
	}
	if got := lastLines("a\n", 5); got != "a" {
		t.Errorf("lastLines = %q", got)
	}
}

func TestSearchable(t *testing.T) {
	dir := t.TempDir()
	fi := func(mode os.FileMode) os.FileInfo {
		t.Helper()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	owner := account{OSUser: OSUser{UID: os.Getuid(), GID: os.Getgid()}}
	other := account{OSUser: OSUser{UID: os.Getuid() + 12345, GID: os.Getgid() + 12345}}
	group := account{OSUser: OSUser{UID: os.Getuid() + 12345, GID: 99999}, groups: []uint32{uint32(os.Getgid())}}
	cases := []struct {
		mode os.FileMode
		a    account
		want bool
	}{
		{0o700, owner, true},
		{0o070, owner, false}, // owner bits decide for the owner
		{0o700, other, false},
		{0o701, other, true},
		{0o710, group, true},
		{0o701, group, false}, // group bits decide for group members
	}
	for _, c := range cases {
		if got := searchable(fi(c.mode), c.a); got != c.want {
			t.Errorf("mode %04o uid %d: searchable = %v, want %v", c.mode, c.a.UID, got, c.want)
		}
	}
	os.Chmod(dir, 0o700)
}
