package pgmanage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL).
const maxSocketPath = 107

// socketDirPrefix starts the name of every socket directory; nothing else
// is ever removed as a stale one.
const socketDirPrefix = "tierdb-pg-"

// makeSocketDir creates the private directory the server puts its Unix
// socket in. It is short (under the temp dir, not under DataDir, whose path
// may be long), 0700 and owned by the PostgreSQL account, which is what makes
// trust authentication safe.
func makeSocketDir(a account, port int) (string, error) {
	socketName := fmt.Sprintf(".s.PGSQL.%d", port)
	base := os.TempDir()
	// Room for MkdirTemp's "/tierdb-pg-" plus up to 10 random digits.
	if len(base)+len("/"+socketDirPrefix+"0123456789/")+len(socketName) > maxSocketPath ||
		strings.ContainsAny(base, " \t\n,'\"\\") {
		base = "/tmp"
	}
	if a.switchUser {
		blocker, fi, err := firstUnsearchable(base, a)
		if err != nil {
			return "", err
		}
		if blocker != "" {
			return "", fmt.Errorf("pgmanage: PostgreSQL runs as OS user %q (uid %d) because tierdb runs as root, "+
				"and that user cannot reach the temp directory %s for its Unix socket: %s (mode %04o) is not searchable by it; "+
				"set TMPDIR to a directory it can reach, such as /tmp", a.Name, a.UID, base, blocker, fi.Mode().Perm())
		}
	}
	dir, err := os.MkdirTemp(base, socketDirPrefix)
	if err != nil {
		return "", fmt.Errorf("pgmanage: socket directory: %w", err)
	}
	if p := filepath.Join(dir, socketName); len(p) > maxSocketPath {
		os.Remove(dir)
		return "", fmt.Errorf("pgmanage: Unix socket path %s is longer than %d bytes; set TMPDIR to a shorter directory", p, maxSocketPath)
	}
	if a.switchUser {
		if err := os.Chown(dir, a.UID, a.GID); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("pgmanage: socket directory: %w", err)
		}
	}
	return dir, nil
}

// newSocketDir replaces the socket directory of an earlier run, if one was
// left behind, with a new one.
func newSocketDir(l layout, a account, port int) (string, error) {
	if err := removeStaleSocketDir(l.socketRecord); err != nil {
		return "", err
	}
	dir, err := makeSocketDir(a, port)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(l.socketRecord, []byte(dir+"\n"), 0o600); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("pgmanage: %w", err)
	}
	return dir, nil
}

// removeSocketDir removes the socket directory and its record.
func removeSocketDir(l layout, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	if err := os.Remove(l.socketRecord); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgmanage: %w", err)
	}
	return nil
}

// removeStaleSocketDir deletes the socket directory recorded by an earlier
// run that could not clean up (tierdb was killed). Only call it once no
// server of this cluster runs any more: nothing else uses that directory.
func removeStaleSocketDir(record string) error {
	b, err := os.ReadFile(record)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	dir := strings.TrimSpace(string(b))
	if filepath.IsAbs(dir) && strings.HasPrefix(filepath.Base(dir), socketDirPrefix) {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("pgmanage: removing stale socket directory: %w", err)
		}
	}
	return nil
}
