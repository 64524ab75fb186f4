package pgmanage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/pgmanage"
)

// syncBuffer lets the test read what the supervisor goroutine logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dataDir returns a fresh directory the PostgreSQL user can reach even when
// the test runs as root (t.TempDir's parent is 0700).
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgmanage-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Start opens its own root-owned DataDir to the PostgreSQL user.
	return dir
}

func testOptions(dir string, log *syncBuffer) pgmanage.Options {
	return pgmanage.Options{
		DataDir:        dir,
		Logger:         slog.New(slog.NewTextHandler(log, nil)),
		MaxConnections: 30,
		SharedBuffers:  "16MB",
	}
}

func start(t *testing.T, opts pgmanage.Options) *pgmanage.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgmanage.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return c
}

func stop(t *testing.T, c *pgmanage.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func connect(t *testing.T, connString string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connect %q: %v", connString, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func systemIdentifier(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var id int64
	if err := conn.QueryRow(context.Background(), "SELECT system_identifier FROM pg_control_system()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// processUID reads the real uid of pid from /proc.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return -1
}

// TestLifecycle runs one cluster through everything that needs a running
// server, so that initdb runs only once.
func TestLifecycle(t *testing.T) {
	dir := dataDir(t)
	var log syncBuffer
	opts := testOptions(dir, &log)
	c := start(t, opts)
	ctx := context.Background()

	var sysID int64
	t.Run("query", func(t *testing.T) {
		conn := connect(t, c.ConnString())
		var db, user, collate, encoding string
		err := conn.QueryRow(ctx, `SELECT current_database(), current_user, datcollate, pg_encoding_to_char(encoding)
			FROM pg_database WHERE datname = current_database()`).Scan(&db, &user, &collate, &encoding)
		if err != nil {
			t.Fatal(err)
		}
		if db != "tierdb" || user != "postgres" || collate != "C" || encoding != "UTF8" {
			t.Errorf("got db=%s user=%s collate=%s encoding=%s, want tierdb postgres C UTF8", db, user, collate, encoding)
		}
		var maxConn, fsync string
		if err := conn.QueryRow(ctx, "SELECT current_setting('max_connections'), current_setting('fsync')").Scan(&maxConn, &fsync); err != nil {
			t.Fatal(err)
		}
		if maxConn != "30" || fsync != "on" {
			t.Errorf("max_connections=%s fsync=%s, want 30 on", maxConn, fsync)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives restarts')"); err != nil {
			t.Fatal(err)
		}
		sysID = systemIdentifier(t, conn)
		admin := connect(t, c.AdminConnString())
		if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "postgres" {
			t.Errorf("admin database = %q, %v; want postgres", db, err)
		}
	})

	t.Run("runs as unprivileged user", func(t *testing.T) {
		u := c.OSUser()
		if os.Geteuid() == 0 && u.UID == 0 {
			t.Fatalf("OSUser = %+v while tierdb is root", u)
		}
		if got := processUID(t, c.PID()); got != u.UID {
			t.Errorf("postmaster uid = %d, OSUser().UID = %d", got, u.UID)
		}
		fi, err := os.Stat(c.SocketDir())
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.UID || fi.Mode().Perm() != 0o700 {
			t.Errorf("socket dir owner %d mode %04o, want %d 0700", st.Uid, fi.Mode().Perm(), u.UID)
		}
		if len(c.SocketDir())+len("/.s.PGSQL.5432") > 107 {
			t.Errorf("socket path too long: %s", c.SocketDir())
		}
	})

	t.Run("background pids", func(t *testing.T) {
		conn := connect(t, c.ConnString())
		var clientPID int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&clientPID); err != nil {
			t.Fatal(err)
		}
		pids, err := c.BackgroundPIDs()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pids, clientPID) {
			t.Errorf("BackgroundPIDs %v contains client backend %d", pids, clientPID)
		}
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE backend_type IN ('checkpointer', 'background writer', 'walwriter', 'autovacuum launcher')`)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 3 {
			t.Fatalf("pg_stat_activity shows only %v background processes", want)
		}
		for _, pid := range want {
			if !slices.Contains(pids, int(pid)) {
				t.Errorf("BackgroundPIDs %v lacks %d (from pg_stat_activity)", pids, pid)
			}
		}
	})

	t.Run("supervision", func(t *testing.T) {
		old := c.PID()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Wait for the replacement: a generous bound, only so that a broken
		// supervisor fails instead of hanging.
		deadline := time.Now().Add(45 * time.Second)
		for {
			if pid := c.PID(); pid != 0 && pid != old {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				conn, err := pgx.Connect(cctx, c.ConnString())
				cancel()
				if err == nil {
					var v string
					err = conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v)
					conn.Close(ctx)
					if err != nil || v != "survives restarts" {
						t.Fatalf("after restart: %q, %v", v, err)
					}
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("server not back after kill -9; log:\n%s", log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := c.Restarts(); n != 1 {
			t.Errorf("Restarts() = %d, want 1", n)
		}
		if !strings.Contains(log.String(), "exited unexpectedly") {
			t.Errorf("unexpected exit not logged; log:\n%s", log.String())
		}
	})

	t.Run("stop is idempotent and cleans up", func(t *testing.T) {
		pid := c.PID()
		stop(t, c)
		if err := c.Stop(ctx); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if c.PID() != 0 {
			t.Errorf("PID() = %d after Stop", c.PID())
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("postmaster %d still exists after Stop (kill 0: %v)", pid, err)
		}
		if _, err := os.Stat(c.SocketDir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket dir %s not removed: %v", c.SocketDir(), err)
		}
		if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("postmaster.pid left behind after clean shutdown: %v", err)
		}
	})

	t.Run("startup failure shows server log", func(t *testing.T) {
		bad := opts
		bad.Settings = map[string]string{"shared_buffers": "lots"}
		_, err := pgmanage.Start(ctx, bad)
		if err == nil {
			t.Fatal("Start with an invalid setting succeeded")
		}
		if !strings.Contains(err.Error(), `"shared_buffers"`) {
			t.Errorf("error lacks the server's complaint: %v", err)
		}
	})

	t.Run("reuse after restart", func(t *testing.T) {
		c2 := start(t, opts)
		conn := connect(t, c2.ConnString())
		if got := systemIdentifier(t, conn); got != sysID {
			t.Errorf("system identifier %d, was %d: cluster was re-created", got, sysID)
		}
		var v string
		if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "survives restarts" {
			t.Errorf("data after restart: %q, %v", v, err)
		}
		conn.Close(ctx)
		stop(t, c2)
	})

	t.Run("leftover postmaster is stopped", func(t *testing.T) {
		// A server tierdb did not start (as if from a killed tierdb).
		pgDir := filepath.Join(dir, "pg")
		sock, err := os.MkdirTemp("", "pgmanage-leftover-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(sock)
		leftover := exec.Command(filepath.Join(c.BinDir(), "postgres"), "-D", pgDir,
			"-c", "listen_addresses=", "-c", "unix_socket_directories="+sock)
		leftover.Dir = pgDir
		if os.Geteuid() == 0 {
			u := c.OSUser()
			if err := os.Chown(sock, u.UID, u.GID); err != nil {
				t.Fatal(err)
			}
			leftover.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
		}
		if err := leftover.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- leftover.Wait() }()
		defer leftover.Process.Kill()
		waitForLockFile(t, pgDir, leftover.Process.Pid)

		c3 := start(t, opts)
		select {
		case <-exited:
		default:
			t.Errorf("leftover postmaster %d still running after Start", leftover.Process.Pid)
		}
		connect(t, c3.ConnString())
		if !strings.Contains(log.String(), "earlier tierdb run") {
			t.Errorf("leftover not reported; log:\n%s", log.String())
		}
		stop(t, c3)
	})

	t.Run("orphaned backend is stopped", func(t *testing.T) {
		// A single-user backend works in the cluster directory like a
		// backend whose postmaster was killed, and keeps its lock.
		pgDir := filepath.Join(dir, "pg")
		orphan := exec.Command(filepath.Join(c.BinDir(), "postgres"), "--single", "-D", pgDir, "postgres")
		orphan.Dir = pgDir
		stdin, err := orphan.StdinPipe() // open stdin keeps it waiting for input
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		if os.Geteuid() == 0 {
			u := c.OSUser()
			orphan.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
		}
		if err := orphan.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- orphan.Wait() }()
		defer orphan.Process.Kill()
		waitForLockFile(t, pgDir, -orphan.Process.Pid)

		c4 := start(t, opts)
		select {
		case <-exited:
		default:
			t.Errorf("orphaned backend %d still running after Start", orphan.Process.Pid)
		}
		connect(t, c4.ConnString())
		if !strings.Contains(log.String(), "orphaned") {
			t.Errorf("orphan not reported; log:\n%s", log.String())
		}

		// Stop with an expired context shuts down immediately, and says so.
		pid := c4.PID()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := c4.Stop(cctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Stop(cancelled ctx) = %v, want context.Canceled", err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("postmaster %d still exists after Stop (kill 0: %v)", pid, err)
		}
	})

	t.Run("server dies with tierdb", func(t *testing.T) {
		helper := exec.Command(os.Args[0], "-test.run=^TestHelperTierdb$")
		helper.Env = append(os.Environ(), helperEnv+"="+dir)
		out, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		helper.Stderr = os.Stderr
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		var socketDir string
		if _, err := fmt.Fscanf(out, "postmaster %d %s\n", &pid, &socketDir); err != nil {
			helper.Process.Kill()
			helper.Wait()
			t.Fatalf("helper did not report a postmaster: %v", err)
		}
		helper.Process.Kill()
		helper.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for processExists(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("postmaster %d survived tierdb's death", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}

		// The next start recovers and removes the dead run's socket dir.
		c5 := start(t, opts)
		connect(t, c5.ConnString())
		if _, err := os.Stat(socketDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket dir %s of the killed run not removed: %v", socketDir, err)
		}
		stop(t, c5)
	})
}

// helperEnv makes the test binary act as a tierdb that starts a cluster in
// the given data directory and waits to be killed.
const helperEnv = "PGMANAGE_TEST_HELPER_DATADIR"

func TestHelperTierdb(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestLifecycle")
	}
	c, err := pgmanage.Start(context.Background(), pgmanage.Options{DataDir: dir, SharedBuffers: "16MB", MaxConnections: 30})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("postmaster %d %s\n", c.PID(), c.SocketDir())
	select {}
}

// processExists is false once pid is gone or a zombie (its parent, the
// killed helper, cannot reap it any more).
func processExists(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// waitForLockFile waits until pid has written postmaster.pid, i.e. owns
// the directory; the bound only keeps a broken test from hanging.
func waitForLockFile(t *testing.T, pgDir string, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(pgDir, "postmaster.pid"))
		if err == nil && strings.HasPrefix(string(b), strconv.Itoa(pid)+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leftover postmaster %d did not take the lock file", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestUnreachableDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the PostgreSQL user differs from tierdb's only when tierdb is root")
	}
	private, err := os.MkdirTemp("", "pgmanage-private-") // 0700, root's
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(private)
	var log syncBuffer
	_, err = pgmanage.Start(context.Background(), testOptions(filepath.Join(private, "data"), &log))
	if err == nil {
		t.Fatal("Start succeeded in a directory the PostgreSQL user cannot reach")
	}
	for _, want := range []string{"cannot reach", private, "--data-dir", "/var/lib/tierdb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if entries, _ := os.ReadDir(private); len(entries) != 0 {
		t.Errorf("failed Start created %v", entries)
	}
}

func TestExplicitOSUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Options.OSUser only applies when tierdb is root")
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skip("no user nobody here")
	}
	var log syncBuffer
	opts := testOptions(dataDir(t), &log)
	opts.OSUser = "nobody"
	c := start(t, opts)
	if u := c.OSUser(); u.Name != "nobody" || processUID(t, c.PID()) != u.UID {
		t.Errorf("OSUser() = %+v, postmaster uid %d", u, processUID(t, c.PID()))
	}
	connect(t, c.ConnString())
	stop(t, c)
}

func TestNonEmptyUninitializedClusterDir(t *testing.T) {
	dir := dataDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "pg"), 0o700); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "pg", "something")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	_, err := pgmanage.Start(context.Background(), testOptions(dir, &log))
	if err == nil || !strings.Contains(err.Error(), "no PG_VERSION") {
		t.Fatalf("Start = %v, want a complaint about the half-made cluster", err)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("Start touched a file it does not own: %v", err)
	}
}

func TestFindBinaries(t *testing.T) {
	t.Run("bogus override", func(t *testing.T) {
		_, err := pgmanage.FindBinaries(t.TempDir())
		if !errors.Is(err, pgmanage.ErrNoBinaries) {
			t.Fatalf("err = %v, want ErrNoBinaries", err)
		}
		for _, want := range []string{"apt-get install -y postgresql", "--postgres-bin", "--postgres-url"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
	})
	t.Run("search", func(t *testing.T) {
		dir, err := pgmanage.FindBinaries("")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"postgres", "initdb", "pg_ctl"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Error(err)
			}
		}
		again, err := pgmanage.FindBinaries(dir)
		if err != nil || again != dir {
			t.Errorf("FindBinaries(%q) = %q, %v", dir, again, err)
		}
	})
}
