package pgmanage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// clusterMajor returns the major version recorded in pgDir/PG_VERSION, or ""
// when the cluster has not been initialized.
func clusterMajor(pgDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(pgDir, "PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pgmanage: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// serverMajor asks binDir/postgres for its major version in PG_VERSION's
// notation ("15", or "9.6" before version 10).
func serverMajor(ctx context.Context, binDir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("pgmanage: %s --version: %w", filepath.Join(binDir, "postgres"), err)
	}
	major, ok := majorFromVersionOutput(string(out))
	if !ok {
		return "", fmt.Errorf("pgmanage: cannot parse %q from %s --version", strings.TrimSpace(string(out)), filepath.Join(binDir, "postgres"))
	}
	return major, nil
}

// majorFromVersionOutput parses "postgres (PostgreSQL) 15.18 (Debian ...)".
func majorFromVersionOutput(out string) (string, bool) {
	_, rest, ok := strings.Cut(out, ") ")
	if !ok {
		return "", false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", false
	}
	// Development builds say e.g. "17beta1" or "18devel".
	v := fields[0]
	if i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	first, err := strconv.Atoi(parts[0])
	if err != nil {
		return "", false
	}
	if first >= 10 || len(parts) == 1 {
		return parts[0], true
	}
	return parts[0] + "." + parts[1], true
}

// binariesForCluster checks that binDir can run the existing cluster in
// pgDir. Without an explicit --postgres-bin it switches to the Debian
// directory of the cluster's own major version when that is installed, so
// installing a newer PostgreSQL next to the old one does not break tierdb.
func binariesForCluster(ctx context.Context, binDir string, explicit bool, pgDir string, logger *slog.Logger) (string, error) {
	want, err := clusterMajor(pgDir)
	if err != nil || want == "" {
		return binDir, err
	}
	have, err := serverMajor(ctx, binDir)
	if err != nil {
		return "", err
	}
	if have == want {
		return binDir, nil
	}
	if !explicit {
		alt := filepath.Join(debianPGRoot, want, "bin")
		if len(missingBinaries(alt)) == 0 {
			logger.Info("using the PostgreSQL version the cluster was created with",
				"cluster", pgDir, "version", want, "bin", alt, "newest", binDir)
			return alt, nil
		}
	}
	return "", fmt.Errorf("pgmanage: the cluster in %s was created by PostgreSQL %s, but %s holds PostgreSQL %s; "+
		"install PostgreSQL %s (on Debian/Ubuntu: apt-get install -y postgresql-%s) and pass --postgres-bin=%s, "+
		"or upgrade the cluster with pg_upgrade",
		pgDir, want, binDir, have, want, want, filepath.Join(debianPGRoot, want, "bin"))
}
