package pgmanage

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Tools outside tierdb (pg_dump and pg_restore, through `tierdb dump` and
// `tierdb restore`) reach the embedded cluster through these: which node
// of a data directory is the primary, whether a server runs there now and
// on which socket, and which binaries match the cluster's version.

// PrimaryNodeDir is the directory (Options.DataDir of a Start) of the
// primary of the set in dataDir: dataDir itself, or dataDir/node<i> after
// a failover made node i the primary (recorded in replset.json).
func PrimaryNodeDir(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", err
	}
	s := &Set{opts: Options{DataDir: abs}}
	st, err := s.readState()
	if err != nil {
		return "", err
	}
	if st.Primary == 0 {
		return abs, nil
	}
	return filepath.Join(abs, "node"+strconv.Itoa(st.Primary)), nil
}

// Initialized reports whether nodeDir holds a cluster (pg/PG_VERSION).
func Initialized(nodeDir string) bool { return newLayout(nodeDir).initialized() }

// RunningServer describes a server found running in a node directory.
type RunningServer struct {
	PID int
	// ConnString reaches its "tierdb" database over its Unix socket, as
	// the superuser (trust authentication: only the PostgreSQL OS user
	// and root can reach the socket).
	ConnString string
	SocketDir  string
}

// FindRunning returns the PostgreSQL server running in nodeDir's cluster
// (started by a tierdb serving it, or left over by one), nil when none
// runs. It reads the server's lock file, postmaster.pid, which names its
// socket directory and port.
func FindRunning(nodeDir string) (*RunningServer, error) {
	l := newLayout(nodeDir)
	dir, err := filepath.EvalSymlinks(l.pgDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("pgmanage: %w", err)
	}
	lines, err := readLines(filepath.Join(l.pgDir, "postmaster.pid"), 5)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgmanage: %w", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	if pid <= 0 || !alive(pid) {
		return nil, nil
	}
	if in, known := isPostgresIn(pid, dir); known && !in {
		return nil, nil // a stale lock file; its PID belongs to another process
	}
	if len(lines) < 5 {
		return nil, fmt.Errorf("pgmanage: %s: the server (pid %d) is still starting", filepath.Join(l.pgDir, "postmaster.pid"), pid)
	}
	port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
	sock := strings.TrimSpace(lines[4])
	if port <= 0 || sock == "" {
		return nil, fmt.Errorf("pgmanage: the server (pid %d) in %s has no Unix socket", pid, l.pgDir)
	}
	return &RunningServer{PID: pid, SocketDir: sock,
		ConnString: fmt.Sprintf("host=%s port=%d user=postgres dbname=tierdb sslmode=disable", quoteConnValue(sock), port)}, nil
}

func readLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for len(out) < n && sc.Scan() {
		out = append(out, sc.Text())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, sc.Err()
}

// BinariesFor returns the directory of the PostgreSQL binaries that match
// the cluster in nodeDir, chosen as Start chooses them (override is
// --postgres-bin; empty: searched, preferring the cluster's own major
// version).
func BinariesFor(ctx context.Context, nodeDir, override string, logger *slog.Logger) (string, error) {
	bin, err := FindBinaries(override)
	if err != nil {
		return "", err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return binariesForCluster(ctx, bin, override != "", newLayout(nodeDir).pgDir, logger)
}
