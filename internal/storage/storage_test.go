package storage

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/pgmanage/pgtest"
	"tierdb/internal/qos"
)

var connString string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(cs string) { connString = cs })
}

func open(t *testing.T) *Store { return openWith(t, 2, "") }

// openWith opens a store with backends per tier and extra connection
// parameters (" name=value ...").
func openWith(t *testing.T, backends int, params string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{ConnString: connString + params, BackendsPerTier: [qos.NumTiers]int{backends, backends, backends}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func doc(t *testing.T, d bson.D) Doc {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return Doc{ID: d[0].Value, D: d, Raw: raw}
}

func TestTierPoolsKnowTheirBackendPIDs(t *testing.T) {
	s := open(t)
	for tier := qos.Tier(0); tier < qos.NumTiers; tier++ {
		if err := s.Ping(context.Background(), tier); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]qos.Tier{}
	for tier := qos.Tier(0); tier < qos.NumTiers; tier++ {
		pids := s.BackendPIDs(tier)
		if len(pids) == 0 {
			t.Fatalf("tier %s: no backend PIDs recorded", tier)
		}
		for _, pid := range pids {
			if other, dup := seen[pid]; dup {
				t.Fatalf("backend %d belongs to tiers %s and %s", pid, other, tier)
			}
			seen[pid] = tier
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil {
				t.Fatalf("backend %d of tier %s is not a live process: %v", pid, tier, err)
			}
			if !strings.HasPrefix(string(cmdline), "postgres") {
				t.Fatalf("pid %d is not a postgres backend: %q", pid, cmdline)
			}
		}
	}
}

func TestInsertReportsDuplicatesOrderedAndUnordered(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	c, err := s.CollectionForWrite(ctx, On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n, werrs, err := s.Insert(ctx, On{}, c, []Doc{doc(t, bson.D{{Key: "_id", Value: int32(1)}})}, true); n != 1 || werrs != nil || err != nil {
		t.Fatalf("first insert: %d %v %v", n, werrs, err)
	}
	batch := []Doc{
		doc(t, bson.D{{Key: "_id", Value: int32(2)}}),
		doc(t, bson.D{{Key: "_id", Value: 1.0}}), // equal to int32(1): a duplicate
		doc(t, bson.D{{Key: "_id", Value: int32(3)}}),
	}
	n, werrs, err := s.Insert(ctx, On{}, c, batch, true)
	if err != nil || n != 1 || len(werrs) != 1 || werrs[0].Index != 1 {
		t.Fatalf("ordered: n=%d werrs=%v err=%v", n, werrs, err)
	}
	if !IsCode(werrs[0].Err, ErrDuplicateKey) || !strings.Contains(werrs[0].Err.(*Error).Msg, "index: _id_ dup key: { _id: 1") {
		t.Fatalf("ordered: unexpected error %v", werrs[0].Err)
	}
	batch[0] = doc(t, bson.D{{Key: "_id", Value: int32(4)}})
	n, werrs, err = s.Insert(ctx, On{}, c, batch, false)
	if err != nil || n != 2 || len(werrs) != 1 || werrs[0].Index != 1 {
		t.Fatalf("unordered: n=%d werrs=%v err=%v", n, werrs, err)
	}
	if got, _ := s.Count(ctx, On{}, c, "", nil); got != 4 {
		t.Fatalf("want 4 rows, have %d", got)
	}
}

// testCollection opens a store with a collection named after the test.
func testCollection(t *testing.T) (*Store, *Collection) {
	t.Helper()
	s := open(t)
	c, err := s.CollectionForWrite(context.Background(), On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// oneCounter is a collection of the test's own holding {_id: "a", n: 1}.
func oneCounter(t *testing.T) (*Store, *Collection, Doc) {
	t.Helper()
	s, c := testCollection(t)
	v1 := doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: int32(1)}})
	if _, _, err := s.Insert(context.Background(), On{}, c, []Doc{v1}, true); err != nil {
		t.Fatal(err)
	}
	return s, c, v1
}

func TestReplaceIsCompareAndSwap(t *testing.T) {
	s, c, v1 := oneCounter(t)
	ctx := context.Background()
	v2 := doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: int32(2)}})
	v3 := doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: int32(3)}})
	key := IDKey("a")
	if ok, err := s.Replace(ctx, On{}, c, key, v1.Raw, v2); !ok || err != nil {
		t.Fatalf("replace from the current version: ok=%v err=%v", ok, err)
	}
	if ok, err := s.Replace(ctx, On{}, c, key, v1.Raw, v3); ok || err != nil {
		t.Fatalf("replace from a stale version must not apply: ok=%v err=%v", ok, err)
	}
	row, err := s.Get(ctx, On{}, c, key)
	if err != nil || row == nil || string(row.Doc) != string(v2.Raw) {
		t.Fatalf("stored document is not v2: %v %v", row, err)
	}
}

func TestIndexBackfillMultikeyAndUnique(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	name := t.Name()
	c, err := s.CollectionForWrite(ctx, On{}, "st", name)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		doc(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(5)}}),
		doc(t, bson.D{{Key: "_id", Value: int32(2)}, {Key: "a", Value: bson.A{int32(5), int32(6)}}}),
		doc(t, bson.D{{Key: "_id", Value: int32(3)}}),
	}
	if _, _, err := s.Insert(ctx, On{}, c, docs, true); err != nil {
		t.Fatal(err)
	}
	before, after, _, err := s.CreateIndexes(ctx, On{}, "st", name, []Index{{Name: "a_1", Keys: []IndexKey{{Field: "a"}}}})
	if err != nil || before != 1 || after != 2 {
		t.Fatalf("create: %d %d %v", before, after, err)
	}
	c, err = s.Collection(ctx, On{}, "st", name)
	if err != nil {
		t.Fatal(err)
	}
	var nulls, keyed int
	err = s.pool(ctx, On{}).QueryRow(ctx, `SELECT count(*) FILTER (WHERE k_1 IS NULL), count(*) FILTER (WHERE k_1 IS NOT NULL) FROM `+c.table).Scan(&nulls, &keyed)
	if err != nil || nulls != 1 || keyed != 2 {
		t.Fatalf("backfill: %d NULL (multikey) and %d keyed rows, err %v; want 1 and 2", nulls, keyed, err)
	}
	// The same keys again: nothing to do. Other name, same keys: a conflict.
	if b, a, _, err := s.CreateIndexes(ctx, On{}, "st", name, []Index{{Name: "a_1", Keys: []IndexKey{{Field: "a"}}}}); err != nil || b != a {
		t.Fatalf("idempotent create: %d %d %v", b, a, err)
	}
	if _, _, _, err := s.CreateIndexes(ctx, On{}, "st", name, []Index{{Name: "other", Keys: []IndexKey{{Field: "a"}}}}); !IsCode(err, ErrIndexConflict) {
		t.Fatalf("want ErrIndexConflict, got %v", err)
	}
	// A unique index over duplicate values cannot be built.
	if _, _, err := s.Insert(ctx, On{}, c, []Doc{doc(t, bson.D{{Key: "_id", Value: int32(4)}, {Key: "b", Value: "x"}}), doc(t, bson.D{{Key: "_id", Value: int32(5)}, {Key: "b", Value: "x"}})}, true); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.CreateIndexes(ctx, On{}, "st", name, []Index{{Name: "b_1", Keys: []IndexKey{{Field: "b"}}, Unique: true}}); !IsCode(err, ErrDuplicateKey) {
		t.Fatalf("want ErrDuplicateKey, got %v", err)
	}
	if _, err := s.DropIndex(ctx, On{}, "st", name, "nope"); !IsCode(err, ErrIndexNotFound) {
		t.Fatalf("want ErrIndexNotFound, got %v", err)
	}
	if _, err := s.DropIndex(ctx, On{}, "st", name, "a_1"); err != nil {
		t.Fatal(err)
	}
}

func TestDropAndMissingCollections(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if _, err := s.Collection(ctx, On{}, "st", "missing"); !IsCode(err, ErrNamespaceNotFound) {
		t.Fatalf("want ErrNamespaceNotFound, got %v", err)
	}
	if err := s.CreateCollection(ctx, On{}, "st2", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCollection(ctx, On{}, "st2", "c"); !IsCode(err, ErrNamespaceExists) {
		t.Fatalf("want ErrNamespaceExists, got %v", err)
	}
	if err := s.DropDatabase(ctx, On{}, "st2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Collection(ctx, On{}, "st2", "c"); !IsCode(err, ErrNamespaceNotFound) {
		t.Fatalf("after dropDatabase: want ErrNamespaceNotFound, got %v", err)
	}
	if err := s.DropCollection(ctx, On{}, "st2", "c"); !IsCode(err, ErrNamespaceNotFound) {
		t.Fatalf("want ErrNamespaceNotFound, got %v", err)
	}
}

func TestAsyncCommitIsForThatWriteAlone(t *testing.T) {
	ctx := context.Background()
	// The test cluster runs with synchronous_commit off; these backends
	// start with it on, as the embedded PostgreSQL's do.
	s := openWith(t, 1, " synchronous_commit=on")
	if _, err := s.pool(ctx, On{}).Exec(ctx, `DROP TABLE IF EXISTS st_async; CREATE TABLE st_async (n int PRIMARY KEY, setting text)`); err != nil {
		t.Fatal(err)
	}
	defer s.pool(ctx, On{}).Exec(ctx, `DROP TABLE st_async`)
	record := `INSERT INTO st_async VALUES ($1, current_setting('synchronous_commit'))`
	if _, err := s.write(ctx, On{Async: true}, record, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.write(ctx, On{}, record, 2); err != nil {
		t.Fatal(err)
	}
	// A failing async write leaves the backend usable and out of any
	// transaction, with its setting as before.
	if _, err := s.write(ctx, On{Async: true}, record, 1); !IsCode(fromPGDup(ctx, err), ErrDuplicateKey) {
		t.Fatalf("duplicate async insert: %v, want a duplicate key error", err)
	}
	if _, err := s.write(ctx, On{}, record, 3); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := s.pool(ctx, On{}).QueryRow(ctx, `SELECT string_agg(setting, ',' ORDER BY n) || ' / ' || current_setting('synchronous_commit') FROM st_async`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "off,on,on / on"; got != want {
		t.Fatalf("synchronous_commit of the writes / of the session afterwards: %s, want %s", got, want)
	}
}

func TestFlushWALFlushesWhatWasInsertedBefore(t *testing.T) {
	// The test cluster commits asynchronously by default, so the write
	// below leaves WAL unflushed until the WAL writer's next round.
	s := open(t)
	ctx := context.Background()
	if _, err := s.pool(ctx, On{}).Exec(ctx, `CREATE TABLE IF NOT EXISTS st_flush (n int); INSERT INTO st_flush VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	defer s.pool(ctx, On{}).Exec(ctx, `DROP TABLE st_flush`)
	var inserted string
	if err := s.pool(ctx, On{}).QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&inserted); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushWAL(ctx, s.Nodes()[0]); err != nil {
		t.Fatal(err)
	}
	var flushed bool
	if err := s.pool(ctx, On{}).QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, inserted).Scan(&flushed); err != nil {
		t.Fatal(err)
	}
	if !flushed {
		t.Fatal("FlushWAL returned before the WAL inserted earlier was flushed")
	}
}

// WithRowLocked holds the row until its write commits: a second writer of
// the same row waits for it, then reads what the first wrote, so neither
// loses its compare-and-swap.
func TestWithRowLockedSerializesWriters(t *testing.T) {
	s, c, _ := oneCounter(t)
	ctx := context.Background()
	key := IDKey("a")
	bump := func(on On, row *Row) error {
		var d bson.D
		if err := bson.Unmarshal(row.Doc, &d); err != nil {
			return err
		}
		next := doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: d[1].Value.(int32) + 1}})
		if ok, err := s.Replace(ctx, on, c, key, row.Doc, next); !ok || err != nil {
			return fmt.Errorf("replace under the lock: ok=%v err=%v", ok, err)
		}
		return nil
	}
	locked, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.WithRowLocked(ctx, On{}, c, key, func(on On, row *Row) error {
			close(locked)
			<-release // hold the lock while the second writer tries
			return bump(on, row)
		})
	}()
	<-locked
	second := make(chan error, 1)
	go func() { second <- s.WithRowLocked(ctx, On{}, c, key, bump) }()
	select {
	case err := <-second:
		t.Fatalf("the second writer did not wait for the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	row, err := s.Get(ctx, On{}, c, key)
	if err != nil {
		t.Fatal(err)
	}
	var d bson.D
	if err := bson.Unmarshal(row.Doc, &d); err != nil || d[1].Value != int32(3) {
		t.Fatalf("after two locked increments: %v %v", d, err)
	}
	// A missing row is nil, and a failing fn commits nothing.
	if err := s.WithRowLocked(ctx, On{}, c, IDKey("none"), func(_ On, row *Row) error {
		if row != nil {
			return fmt.Errorf("a row for a missing key")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A write under the row lock in a transaction of its own rides with the
// COMMIT. When PostgreSQL refuses it (here a duplicate key on a unique
// index), nothing commits and the write runs again, sent at once, to
// report its own error.
func TestWithRowLockedWriteRidesWithTheCommit(t *testing.T) {
	s, c := testCollection(t)
	ctx := context.Background()
	a := func(b int32) Doc { return doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "b", Value: b}}) }
	z := doc(t, bson.D{{Key: "_id", Value: "z"}, {Key: "b", Value: int32(2)}})
	if _, _, err := s.Insert(ctx, On{}, c, []Doc{a(1), z}, true); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.CreateIndexes(ctx, On{}, "st", t.Name(), []Index{{Name: "b_1", Keys: []IndexKey{{Field: "b"}}, Unique: true}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Collection(ctx, On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	set := func(b int32) (calls int, err error) {
		err = s.WithRowLocked(ctx, On{}, c, IDKey("a"), func(on On, row *Row) error {
			calls++
			ok, err := s.Replace(ctx, on, c, IDKey("a"), row.Doc, a(b))
			if err == nil && !ok {
				err = fmt.Errorf("lost the swap under the lock")
			}
			return err
		})
		return calls, err
	}
	stored := func() string {
		row, err := s.Get(ctx, On{}, c, IDKey("a"))
		if err != nil || row == nil {
			t.Fatalf("get: %v %v", row, err)
		}
		return bson.Raw(row.Doc).String()
	}
	d0, r0 := s.DeferredWrites()
	if calls, err := set(2); !IsCode(err, ErrDuplicateKey) || calls != 2 {
		t.Fatalf("%d runs, err %v; want a duplicate key after the deferred write was refused and run again", calls, err)
	}
	if d, r := s.DeferredWrites(); d != d0+1 || r != r0+1 {
		t.Fatalf("deferred %d, refused %d; want one of each", d-d0, r-r0)
	}
	if got := stored(); got != bson.Raw(a(1).Raw).String() {
		t.Fatalf("after a refused write: %s", got)
	}
	if calls, err := set(3); err != nil || calls != 1 {
		t.Fatalf("%d runs, err %v", calls, err)
	}
	if d, r := s.DeferredWrites(); d != d0+2 || r != r0+1 {
		t.Fatalf("deferred %d, refused %d; want the accepted write deferred too", d-d0, r-r0)
	}
	if got := stored(); got != bson.Raw(a(3).Raw).String() {
		t.Fatalf("after an accepted write: %s", got)
	}
}

// The write under a row lock runs in the transaction that holds the lock,
// not in a subtransaction of it (unless the transaction holds other work):
// a row locked by a transaction and changed by its subtransaction gets a
// MultiXact, which under contention made hot documents a convoy. Seen from
// outside while the lock is held, the old version's xmax is the locking
// transaction's own id, for a write of its own and for a retryable
// write's transaction alike.
func TestWithRowLockedWritesWithoutAMultiXact(t *testing.T) {
	s, c, _ := oneCounter(t)
	ctx := context.Background()
	key := IDKey("a")
	n := int32(1)
	check := func(on On) {
		t.Helper()
		err := s.WithRowLocked(ctx, on, c, key, func(on On, row *Row) error {
			n++
			next := doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: n}})
			if ok, err := s.Replace(ctx, on, c, key, row.Doc, next); !ok || err != nil {
				return fmt.Errorf("replace under the lock: ok=%v err=%v", ok, err)
			}
			var xid, xmax string
			if err := on.Txn.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
				return err
			}
			if err := s.pool(ctx, On{}).QueryRow(ctx, `SELECT xmax::text FROM `+c.table+` WHERE _id = $1`, key).Scan(&xmax); err != nil {
				return err
			}
			if xmax != xid {
				return fmt.Errorf("the old version's xmax is %s, not the locking transaction %s: a MultiXact", xmax, xid)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(On{})
	txn, err := s.BeginWrite(ctx, qos.Normal, SessionKey{LSID: []byte("lock-mxid"), User: "u"}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback(context.WithoutCancel(ctx)) // after a failure, so the store can close
	// As a write that lost its swap does: the statement that changed
	// nothing holds nothing, so the write under the lock needs no savepoint.
	if ok, err := s.Replace(ctx, On{Txn: txn}, c, key, []byte("not the stored version"), doc(t, bson.D{{Key: "_id", Value: "a"}})); ok || err != nil {
		t.Fatalf("a stale swap: ok=%v err=%v", ok, err)
	}
	check(On{Txn: txn})
	if _, err := txn.CommitWrite(ctx, false, []byte("reply")); err != nil {
		t.Fatal(err)
	}
}
