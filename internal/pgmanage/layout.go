package pgmanage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// layout names the files pgmanage keeps under DataDir.
type layout struct {
	dataDir string
	pgDir   string // PGDATA
	logPath string // the server's stderr
	// socketRecord names the current socket directory, so that the next
	// start can remove it if tierdb died without cleaning up.
	socketRecord string
}

func newLayout(dataDir string) layout {
	return layout{
		dataDir:      dataDir,
		pgDir:        filepath.Join(dataDir, "pg"),
		logPath:      filepath.Join(dataDir, "postgres.log"),
		socketRecord: filepath.Join(dataDir, "postgres.socketdir"),
	}
}

func (l layout) initialized() bool {
	_, err := os.Stat(filepath.Join(l.pgDir, "PG_VERSION"))
	return err == nil
}

// prepareDirs creates DataDir and DataDir/pg and makes sure the PostgreSQL
// account can reach and own the cluster directory.
func prepareDirs(l layout, a account, logger *slog.Logger) error {
	if a.switchUser {
		// Fail before creating anything when the way is blocked.
		parent := existingAncestor(filepath.Dir(l.dataDir))
		blocker, fi, err := firstUnsearchable(parent, a)
		if err != nil {
			return err
		}
		if blocker != "" {
			return unreachableError(a, l.dataDir, blocker, fi)
		}
	}
	// Missing parents get mkdir -p's usual mode so that the PostgreSQL
	// account can pass through them; only DataDir itself is private.
	if err := os.MkdirAll(filepath.Dir(l.dataDir), 0o755); err != nil {
		return fmt.Errorf("pgmanage: data directory: %w", err)
	}
	if err := os.Mkdir(l.dataDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pgmanage: data directory: %w", err)
	}
	if a.switchUser {
		if err := letTraverse(l.dataDir, a, logger); err != nil {
			return err
		}
	}
	if l.initialized() {
		fi, err := os.Stat(l.pgDir)
		if err != nil {
			return fmt.Errorf("pgmanage: %w", err)
		}
		if uid := ownerUID(fi); uid != a.UID {
			return fmt.Errorf("pgmanage: the cluster in %s belongs to uid %d, but PostgreSQL would run as %q (uid %d); "+
				"PostgreSQL only runs as the owner of its data directory", l.pgDir, uid, a.Name, a.UID)
		}
		return nil
	}
	return prepareEmptyClusterDir(l.pgDir, a)
}

// prepareEmptyClusterDir readies the directory initdb will fill. A non-empty
// directory without PG_VERSION is an interrupted initdb or someone else's
// files; either way it is not ours to delete.
func prepareEmptyClusterDir(pgDir string, a account) error {
	err := os.Mkdir(pgDir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		empty, eerr := isEmptyDir(pgDir)
		if eerr != nil {
			return fmt.Errorf("pgmanage: %w", eerr)
		}
		if !empty {
			return fmt.Errorf("pgmanage: %s is not empty but holds no PostgreSQL cluster (no PG_VERSION), "+
				"perhaps from an interrupted first start; move it away or delete it so that tierdb can create a new cluster", pgDir)
		}
		err = os.Chmod(pgDir, 0o700)
	}
	if err != nil {
		return fmt.Errorf("pgmanage: cluster directory: %w", err)
	}
	if a.switchUser {
		if err := os.Chown(pgDir, a.UID, a.GID); err != nil {
			return fmt.Errorf("pgmanage: cluster directory: %w", err)
		}
	}
	return nil
}

// existingAncestor returns dir or its closest existing ancestor.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// letTraverse makes sure account a can search every directory from / down
// to dir. tierdb's own directory dir, when root-owned, is opened to a's group
// (0710); anything above it is the administrator's and only checked.
func letTraverse(dir string, a account, logger *slog.Logger) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	blocker, bfi, err := firstUnsearchable(filepath.Dir(real), a)
	if err != nil {
		return err
	}
	if blocker != "" {
		return unreachableError(a, dir, blocker, bfi)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	if searchable(fi, a) {
		return nil
	}
	if ownerUID(fi) != 0 {
		return unreachableError(a, dir, real, fi)
	}
	logger.Info("letting the PostgreSQL OS user's group traverse the data directory",
		"dir", real, "user", a.Name, "mode", "0710")
	if err := os.Chown(real, 0, a.GID); err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	if err := os.Chmod(real, 0o710); err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	return nil
}

// firstUnsearchable returns the first directory from / down to dir that a
// cannot search, or "" when a can reach dir.
func firstUnsearchable(dir string, a account) (string, fs.FileInfo, error) {
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(chain)
	for _, d := range chain {
		fi, err := os.Stat(d)
		if err != nil {
			return "", nil, fmt.Errorf("pgmanage: %w", err)
		}
		if !searchable(fi, a) {
			return d, fi, nil
		}
	}
	return "", nil, nil
}

func unreachableError(a account, target, blocker string, fi fs.FileInfo) error {
	return fmt.Errorf("pgmanage: PostgreSQL refuses to run as root, so it runs as OS user %q (uid %d), "+
		"and that user cannot reach %s: %s (mode %04o, owner uid %d) is not searchable by it. "+
		"Use a --data-dir that user can reach, e.g. /var/lib/tierdb or /tmp/tierdb, or make %s searchable (chmod o+x %s)",
		a.Name, a.UID, target, blocker, fi.Mode().Perm(), ownerUID(fi), blocker, blocker)
}

// searchable applies the Unix permission rules (owner, else group, else
// other; ACLs are not considered) for the execute bit of a directory.
func searchable(fi fs.FileInfo, a account) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == a.UID:
		return perm&0o100 != 0
	case int(st.Gid) == a.GID || slices.Contains(a.groups, st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func ownerUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
