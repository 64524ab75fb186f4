package pgmanage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL).
const maxSocketPath = 107

// makeSocketDir creates the private directory the server puts its Unix
// socket in. It is short (under the temp dir, not under DataDir, whose path
// may be long), 0700 and owned by the PostgreSQL account, which is what makes
// trust authentication safe.
func makeSocketDir(a account, port int) (string, error) {
	socketName := fmt.Sprintf(".s.PGSQL.%d", port)
	base := os.TempDir()
	// Room for MkdirTemp's "/tierdb-pg-" plus up to 10 random digits.
	if len(base)+len("/tierdb-pg-0123456789/")+len(socketName) > maxSocketPath ||
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
	dir, err := os.MkdirTemp(base, "tierdb-pg-")
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
