package godriver

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"tierdb/internal/bench/rig"
	"tierdb/internal/pgmanage"
)

// startTierdb builds tierdb and serves it on a private PostgreSQL.
func startTierdb(t *testing.T, ctx context.Context) *mongo.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL and tierdb")
	}
	if _, err := pgmanage.FindBinaries(""); err != nil {
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "tierdb")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "tierdb/cmd/tierdb").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pg, err := rig.StartPostgres(ctx, rig.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	srv, err := rig.StartTierdb(ctx, rig.TierdbOptions{Bin: bin, PostgresURL: pg.Cluster.ConnString(), LogPath: filepath.Join(pg.Dir, "tierdb.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(srv.LogTail())
		}
		_ = srv.Stop()
	})
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + srv.Addr() + "/").SetMaxPoolSize(300))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// The Go driver's WithTransaction: commits a transfer as one, retries a
// transient write conflict from the start, and an aborted callback leaves
// nothing behind.
func TestGoDriverWithTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startTierdb(t, ctx)
	coll := c.Database("bank").Collection("acct")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "a"}, {Key: "bal", Value: 100}}, bson.D{{Key: "_id", Value: "b"}, {Key: "bal", Value: 0}}}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)

	attempts := 0
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		attempts++
		var a bson.M
		if err := coll.FindOne(sc, bson.D{{Key: "_id", Value: "a"}}).Decode(&a); err != nil {
			return nil, err
		}
		if attempts == 1 {
			// A concurrent writer changes the document after this
			// transaction's snapshot: its own write must conflict.
			if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: 1}}}}); err != nil {
				return nil, err
			}
		}
		if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -30}}}}); err != nil {
			return nil, err
		}
		_, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: 30}}}})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Errorf("callback ran %d times, want 2 (one write conflict, one retry)", attempts)
	}
	want := map[string]int32{"a": 71, "b": 30}
	for id, bal := range want {
		var d bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d["bal"] != bal {
			t.Errorf("%s: balance %v, want %d", id, d["bal"], bal)
		}
	}

	boom := errors.New("callback gave up")
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: "c"}}); err != nil {
			return nil, err
		}
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WithTransaction = %v, want the callback's error", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "c"}}); err != nil || n != 0 {
		t.Errorf("an aborted transaction's insert is visible: %d, %v", n, err)
	}
}

// The Go driver retries writes by default; each is applied once.
func TestGoDriverRetryableWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startTierdb(t, ctx)
	coll := c.Database("rw").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	var d bson.M
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d["n"] != int32(21) {
		t.Errorf("n = %v, want 21", d["n"])
	}
}
