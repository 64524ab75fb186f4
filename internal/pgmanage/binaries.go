package pgmanage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoBinaries is wrapped by the error FindBinaries returns when it finds no
// usable PostgreSQL installation.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found")

// debianPGRoot is where Debian/Ubuntu install one directory per major version.
const debianPGRoot = "/usr/lib/postgresql"

const installHint = "Install PostgreSQL (on Debian/Ubuntu: apt-get install -y postgresql), " +
	"or pass --postgres-bin=<directory containing postgres, initdb and pg_ctl>, " +
	"or use an existing PostgreSQL server with --postgres-url=<connection string>"

// FindBinaries returns the directory holding the PostgreSQL server binaries
// (postgres, initdb, pg_ctl). A non-empty override is the only place looked
// at. Otherwise it tries `pg_config --bindir`, then the highest version under
// /usr/lib/postgresql/*/bin. The error says how to install PostgreSQL.
func FindBinaries(override string) (string, error) {
	if override != "" {
		if missing := missingBinaries(override); len(missing) > 0 {
			return "", fmt.Errorf("pgmanage: %w: --postgres-bin %s lacks %s. %s",
				ErrNoBinaries, override, strings.Join(missing, ", "), installHint)
		}
		return filepath.Abs(override)
	}
	var looked []string
	if dir, ok := pgConfigBinDir(); ok {
		if len(missingBinaries(dir)) == 0 {
			return dir, nil
		}
		looked = append(looked, dir+" (from pg_config)")
	} else {
		looked = append(looked, "pg_config on PATH")
	}
	for _, dir := range debianBinDirs() {
		if len(missingBinaries(dir)) == 0 {
			return dir, nil
		}
		looked = append(looked, dir)
	}
	if len(looked) == 1 {
		looked = append(looked, debianPGRoot+"/*/bin")
	}
	return "", fmt.Errorf("pgmanage: %w (looked at %s). %s",
		ErrNoBinaries, strings.Join(looked, ", "), installHint)
}

// missingBinaries lists which of the required executables dir lacks.
func missingBinaries(dir string) []string {
	var missing []string
	for _, name := range [...]string{"postgres", "initdb", "pg_ctl"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

func pgConfigBinDir() (string, bool) {
	path, err := exec.LookPath("pg_config")
	if err != nil {
		return "", false
	}
	out, err := exec.Command(path, "--bindir").Output()
	if err != nil {
		return "", false
	}
	dir := strings.TrimSpace(string(out))
	return dir, dir != ""
}

// debianBinDirs returns /usr/lib/postgresql/<version>/bin, highest version
// first.
func debianBinDirs() []string {
	entries, err := os.ReadDir(debianPGRoot)
	if err != nil {
		return nil
	}
	var versions []string
	for _, e := range entries {
		if _, ok := parseVersion(e.Name()); ok {
			versions = append(versions, e.Name())
		}
	}
	slices.SortFunc(versions, func(a, b string) int {
		va, _ := parseVersion(a)
		vb, _ := parseVersion(b)
		return -slices.Compare(va, vb)
	})
	dirs := make([]string, len(versions))
	for i, v := range versions {
		dirs[i] = filepath.Join(debianPGRoot, v, "bin")
	}
	return dirs
}

// parseVersion parses "15" or "9.6" into its numeric components.
func parseVersion(s string) ([]int, bool) {
	var parts []int
	for p := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		parts = append(parts, n)
	}
	return parts, len(parts) > 0
}
