package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommandLineQuotesForAShell(t *testing.T) {
	got := CommandLine("tierdb-bench baseline", []string{"--duration=5s", "--tierdb-args", "--log-level warn", "it's"})
	if want := `tierdb-bench baseline --duration=5s --tierdb-args '--log-level warn' 'it'\''s'`; got != want {
		t.Errorf("CommandLine = %s, want %s", got, want)
	}
}

func TestFindTierdb(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tierdb")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho tierdb 1.2.3\necho more\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindTierdb(bin)
	if err != nil || got != bin {
		t.Errorf("FindTierdb(%q) = %q, %v", bin, got, err)
	}
	if _, err := FindTierdb(filepath.Join(dir, "missing")); err == nil {
		t.Error("FindTierdb accepted a missing file")
	}
	if v := TierdbVersion(bin); v != "tierdb 1.2.3" {
		t.Errorf("TierdbVersion = %q, want its first line", v)
	}
	// Without a flag and with no tierdb beside the test binary: ./bin/tierdb.
	t.Chdir(dir)
	if err := os.Mkdir("bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin, filepath.Join("bin", "tierdb")); err != nil {
		t.Fatal(err)
	}
	got, err = FindTierdb("")
	if want := filepath.Join(dir, "bin", "tierdb"); err != nil || got != want {
		t.Errorf("FindTierdb(\"\") = %q, %v; want %s", got, err, want)
	}
}
