package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"tierdb/internal/buildinfo"
)

func TestWriteVersion(t *testing.T) {
	bi := buildinfo.FromBuildInfo(&debug.BuildInfo{GoVersion: "go1.99.1", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.modified", Value: "true"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
		{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
	}})
	var b bytes.Buffer
	writeVersion(&b, bi, pgFound{Version: "15.8 (Debian 15.8-0+deb12u1)", BinDir: "/usr/lib/postgresql/15/bin"})
	want := `tierdb ` + buildinfo.Version + ` (commit 0123456789ab+modified, go1.99.1)
commit:     0123456789abcdef0123456789abcdef01234567 with uncommitted changes, committed 2025-01-02T03:04:05Z
go:         go1.99.1 linux/arm64
mongodb:    6.0.0-compatible, wire versions 0 to 17
postgresql: 15.8 (Debian 15.8-0+deb12u1), in /usr/lib/postgresql/15/bin
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}

	// No VCS information (go test, a tree without .git), no PostgreSQL.
	b.Reset()
	writeVersion(&b, buildinfo.FromBuildInfo(nil), pgFound{Err: errors.New("PostgreSQL server binaries not found")})
	out := b.String()
	for _, s := range []string{"(commit unknown, go", "commit:     unknown (built without VCS information", "postgresql: not found (PostgreSQL server binaries not found)"} {
		if !strings.Contains(out, s) {
			t.Errorf("missing %q in\n%s", s, out)
		}
	}
}

func TestFindPostgres(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"initdb", "pg_ctl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if pg := findPostgres(dir); pg.Version != "" || pg.Err == nil {
		t.Fatalf("without postgres: %+v", pg)
	}
	script := "#!/bin/sh\necho 'postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)'\n"
	if err := os.WriteFile(filepath.Join(dir, "postgres"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pg := findPostgres(dir)
	if pg.Version != "15.8 (Debian 15.8-0+deb12u1)" || pg.BinDir != dir || pg.Err != nil {
		t.Fatalf("found %+v", pg)
	}
}

// `make build` stamps the commit: the binary its rule makes reports the
// checkout's HEAD (and whether the tree had changes).
func TestMakeBuildEmbedsTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " is not installed")
		}
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tierdb")
	// The rule `make build` builds bin/tierdb with, for another path.
	cmd := exec.Command("make", "-s", "-C", root, "BIN="+bin, bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "commit:     " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Fatalf("tierdb version says\n%s\nwant a line starting %q", out, want)
	}
}
