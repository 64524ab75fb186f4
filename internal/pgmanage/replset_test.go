package pgmanage_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tierdb/internal/pgmanage"
)

func exec1(t *testing.T, ctx context.Context, connString, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// waitRow polls a node until the query returns want.
func waitRow(t *testing.T, ctx context.Context, connString, sql string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got int
	for time.Now().Before(deadline) {
		conn, err := pgx.Connect(ctx, connString)
		if err == nil {
			err = conn.QueryRow(ctx, sql).Scan(&got)
			conn.Close(ctx)
		}
		if err == nil && got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s on %s: got %d, want %d", sql, connString, got, want)
}

// A set with two standbys replicates, fails over to a standby without losing
// a write, keeps the old primary as a standby of the new one, and comes back
// after a restart with the promoted node still primary.
func TestSetReplicatesAndFailsOver(t *testing.T) {
	ctx := context.Background()
	dir := dataDir(t)
	var log syncBuffer
	opts := testOptions(dir, &log)
	set, err := pgmanage.StartSet(ctx, opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { set.Stop(context.Background()) }()
	nodes := set.Nodes()
	if len(nodes) != 3 || !nodes[0].Primary || nodes[0].ID != 0 {
		t.Fatalf("nodes = %+v", nodes)
	}
	exec1(t, ctx, nodes[0].ConnString, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
	for _, n := range nodes[1:] {
		waitRow(t, ctx, n.ConnString, "SELECT count(*) FROM t", 1)
	}

	exec1(t, ctx, nodes[0].ConnString, "INSERT INTO t VALUES (2)")
	if err := set.Failover(ctx, 2, 10*time.Second); err != nil {
		t.Fatalf("failover: %v\n%s", err, log.String())
	}
	nodes = set.Nodes()
	if nodes[0].ID != 2 || !nodes[0].Primary {
		t.Fatalf("after failover nodes = %+v", nodes)
	}
	// The write made before the failover is on the new primary at once.
	waitRow(t, ctx, nodes[0].ConnString, "SELECT count(*) FROM t", 2)
	exec1(t, ctx, nodes[0].ConnString, "INSERT INTO t VALUES (3)")
	for _, n := range nodes[1:] {
		if n.ConnString == "" {
			t.Fatalf("node%d is down after failover:\n%s", n.ID, log.String())
		}
		waitRow(t, ctx, n.ConnString, "SELECT count(*) FROM t", 3)
	}

	if err := set.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	set, err = pgmanage.StartSet(ctx, opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	nodes = set.Nodes()
	if nodes[0].ID != 2 {
		t.Fatalf("after restart the primary is node%d, want node2", nodes[0].ID)
	}
	exec1(t, ctx, nodes[0].ConnString, "INSERT INTO t VALUES (4)")
	waitRow(t, ctx, nodes[2].ConnString, "SELECT count(*) FROM t", 4)
}
