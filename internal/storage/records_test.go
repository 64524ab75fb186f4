package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/qos"
)

// recordedInsert inserts _id id as statement n of session k and commits it
// with its reply ("reply <id>"), as a retryable write does (its insert
// deferred to the commit).
func recordedInsert(t *testing.T, s *Store, c *Collection, k SessionKey, n int64, id string) *Record {
	t.Helper()
	ctx := context.Background()
	txn, err := s.BeginWrite(ctx, qos.Normal, k, n, true)
	if err != nil {
		t.Fatal(err)
	}
	on := At(qos.Normal)
	on.Txn = txn
	if _, werrs, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: id}})}, true); err != nil || len(werrs) > 0 {
		t.Fatalf("insert %s: %v %v", id, err, werrs)
	}
	prev, err := txn.CommitWrite(ctx, false, []byte("reply "+id))
	if err != nil {
		t.Fatal(err)
	}
	return prev
}

func count(t *testing.T, s *Store, c *Collection) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), At(qos.Normal), c, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sessionAndCollection opens a store with a collection and a session key,
// both named after the test.
func sessionAndCollection(t *testing.T) (*Store, *Collection, SessionKey) {
	t.Helper()
	s, c := testCollection(t)
	return s, c, SessionKey{LSID: []byte(t.Name())}
}

// A retryable write commits with its record; running the same statement
// again (a retry) or an older one rolls the new run back and returns the
// record of the first.
func TestRetryableWriteCommitsOnce(t *testing.T) {
	s, c, k := sessionAndCollection(t)
	ctx := context.Background()
	if prev := recordedInsert(t, s, c, k, 5, "first"); prev != nil {
		t.Fatalf("first run answered from a record: %+v", prev)
	}
	for _, n := range []int64{5, 4} {
		prev := recordedInsert(t, s, c, k, n, "again")
		if prev == nil || prev.TxnNumber != 5 || string(prev.Reply) != "reply first" {
			t.Fatalf("statement %d again: record %+v, want statement 5 with the first reply", n, prev)
		}
	}
	if n := count(t, s, c); n != 1 {
		t.Fatalf("%d documents, want only the first run's", n)
	}

	// Settled tells a retry before it commits.
	for _, n := range []int64{6, 5} {
		want, name := n == 5, fmt.Sprintf("%s_%d", t.Name(), n)
		txn, err := s.BeginWrite(ctx, qos.Normal, k, n, true)
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Rollback(ctx)
		if prev, err := txn.Settled(ctx); err != nil || (prev != nil) != want {
			t.Fatalf("statement %d settled: %+v, %v, want %v", n, prev, err, want)
		}
		// A retry creates no collection (one dropped since, say).
		on := At(qos.Normal)
		on.Txn = txn
		_, err = s.CollectionForWrite(ctx, on, "st", name)
		if (err != nil) != want {
			t.Fatalf("statement %d creating a collection: %v", n, err)
		}
		txn.Rollback(ctx)
		if _, err := s.Collection(ctx, On{}, "st", name); IsCode(err, ErrNamespaceNotFound) != want {
			t.Fatalf("statement %d: collection lookup after: %v", n, err)
		}
	}
}

// Two runs of one write at once (a driver's retry racing a slow first
// attempt): whichever commits first is the write; the other rolls back
// and answers with its reply.
func TestConcurrentRunsOfOneWriteCommitOnce(t *testing.T) {
	s, c, k := sessionAndCollection(t)
	ctx := context.Background()
	slow, err := s.BeginWrite(ctx, qos.Normal, k, 1, false) // its insert sent before the other runs
	if err != nil {
		t.Fatal(err)
	}
	on := At(qos.Normal)
	on.Txn = slow
	if _, _, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: "slow"}})}, true); err != nil {
		t.Fatal(err)
	}
	if prev := recordedInsert(t, s, c, k, 1, "fast"); prev != nil {
		t.Fatalf("the run that committed first answered from a record: %+v", prev)
	}
	if prev, err := slow.CommitWrite(ctx, false, []byte("reply slow")); err != nil || prev == nil || string(prev.Reply) != "reply fast" {
		t.Fatalf("the slow run: %+v, %v, want the fast run's reply", prev, err)
	}
	if n := count(t, s, c); n != 1 {
		t.Fatalf("%d documents, want one", n)
	}
}

// A retryable write's first write waits for the commit and rides with it,
// whether or not the transaction read first (a read-modify-write). When
// PostgreSQL refuses it (a duplicate key, a compare-and-swap that matched
// no row), nothing of the transaction commits, its record included, and
// DeferredFailed says the write is to run again.
func TestDeferredWriteCommitsWithItsRecordOrNotAtAll(t *testing.T) {
	s, c, _ := oneCounter(t) // holds _id "a"
	s.versions = newVersionCache(1 << 20)
	ctx := context.Background()
	n := 0
	for _, readFirst := range []bool{false, true} {
		for _, tc := range []struct {
			name  string
			write func(on On, stored []byte) error
			fails bool
			adds  int64
		}{
			{"duplicate key", func(on On, _ []byte) error {
				_, werrs, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: "a"}})}, true)
				if len(werrs) > 0 {
					t.Errorf("a deferred insert reported %v before it ran", werrs)
				}
				return err
			}, true, 0},
			{"lost swap", func(on On, _ []byte) error {
				ok, err := s.Replace(ctx, on, c, IDKey("a"), []byte("not the stored version"), doc(t, bson.D{{Key: "_id", Value: "a"}}))
				if !ok {
					t.Error("a deferred swap reported a miss before it ran")
				}
				return err
			}, true, 0},
			{"new document", func(on On, _ []byte) error {
				_, _, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: n}})}, true)
				return err
			}, false, 1},
			{"swap", func(on On, stored []byte) error {
				_, err := s.Replace(ctx, on, c, IDKey("a"), stored, doc(t, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: n}}))
				return err
			}, false, 0},
		} {
			n++
			name := fmt.Sprintf("%s, read first %v", tc.name, readFirst)
			k := SessionKey{LSID: []byte(t.Name() + name)}
			before := count(t, s, c)
			stored, err := s.Get(ctx, At(qos.Normal), c, IDKey("a"))
			if err != nil {
				t.Fatal(err)
			}
			txn, err := s.BeginWrite(ctx, qos.Normal, k, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			on := At(qos.Normal)
			on.Txn = txn
			if readFirst {
				if _, err := s.Get(ctx, on, c, IDKey("a")); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.write(on, stored.Doc); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !txn.deferred || txn.begun != readFirst {
				t.Fatalf("%s: the write was sent before the commit", name)
			}
			prev, err := txn.CommitWrite(ctx, false, []byte("r"))
			if txn.DeferredFailed() != tc.fails || (err != nil) != tc.fails || prev != nil {
				t.Fatalf("%s: commit %+v, %v, deferred failed %v", name, prev, err, txn.DeferredFailed())
			}
			r, err := s.LoadRecord(ctx, qos.Normal, k)
			if err != nil || (r == nil) != tc.fails {
				t.Fatalf("%s: record %+v, %v", name, r, err)
			}
			if after := count(t, s, c); after != before+tc.adds {
				t.Fatalf("%s: %d documents, want %d", name, after, before+tc.adds)
			}
			got, err := s.Get(ctx, At(qos.Normal), c, IDKey("a"))
			if err != nil || (string(got.Doc) == string(stored.Doc)) != (tc.name != "swap") {
				t.Fatalf("%s: the document is %v, was %v", name, bson.Raw(got.Doc), bson.Raw(stored.Doc))
			}
			// The version cache never keeps a refused write's version.
			if cached := s.LastWritten(c, IDKey("a")); cached != nil && string(cached) != string(got.Doc) {
				t.Fatalf("%s: the version cache holds %v, the document is %v", name, bson.Raw(cached), bson.Raw(got.Doc))
			}
		}
	}
}

// A transaction's claim comes first: a second start of the same number
// gets the record and begins nothing.
func TestTransactionClaimsItsNumber(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	k := SessionKey{LSID: []byte(t.Name())}
	txn, prev, err := s.BeginRecorded(ctx, qos.Normal, k, 3)
	if err != nil || prev != nil {
		t.Fatalf("first start: %+v, %v", prev, err)
	}
	if err := txn.CommitRecorded(ctx, false, k, []byte("done")); err != nil {
		t.Fatal(err)
	}
	txn, prev, err = s.BeginRecorded(ctx, qos.Normal, k, 3)
	if err != nil || txn != nil || prev == nil || string(prev.Reply) != "done" {
		t.Fatalf("second start: %v %+v, %v", txn, prev, err)
	}
}

// A transaction that never sent a statement ends without a round trip and
// gives its backend back; the first statement runs inside its BEGIN.
func TestUnsentTransactionRollsBack(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	for range 5 { // more than the pool's two backends
		txn, err := s.Begin(ctx, qos.Normal, false)
		if err != nil {
			t.Fatal(err)
		}
		txn.Rollback(ctx)
	}
	txn, err := s.Begin(ctx, qos.Normal, true)
	if err != nil {
		t.Fatal(err)
	}
	var level string
	if err := txn.QueryRow(ctx, "SHOW transaction_isolation").Scan(&level); err != nil || level != "repeatable read" {
		t.Fatalf("first statement ran outside its BEGIN? %q %v", level, err)
	}
	if _, err := txn.Commit(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// A statement that fails before the transaction has written anything
// restarts it (no savepoint needed); one that fails after a write rolls
// back to its savepoint. Either way the transaction stays usable and what
// was written commits with the record.
func TestFailedStatementsInARetryableWrite(t *testing.T) {
	s, c, _ := oneCounter(t) // holds _id "a"
	ctx := context.Background()
	k := SessionKey{LSID: []byte(t.Name())}
	txn, err := s.BeginWrite(ctx, qos.Normal, k, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback(ctx)
	on := At(qos.Normal)
	on.Txn = txn
	for i, id := range []string{"a", "b", "a", "c"} {
		_, werrs, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: id}})}, true)
		if err != nil || (len(werrs) > 0) != (id == "a") {
			t.Fatalf("insert %d (%s): %v %v", i, id, err, werrs)
		}
		if txn.Failed() {
			t.Fatalf("insert %d (%s) left the transaction aborted", i, id)
		}
	}
	if prev, err := txn.CommitWrite(ctx, false, []byte("r")); err != nil || prev != nil {
		t.Fatalf("commit: %+v %v", prev, err)
	}
	if n := count(t, s, c); n != 3 {
		t.Fatalf("%d documents, want a, b and c", n)
	}
	if r, err := s.LoadRecord(ctx, qos.Normal, k); err != nil || r == nil || r.TxnNumber != 1 {
		t.Fatalf("record: %+v %v", r, err)
	}
}

// A retryable write that creates its collection checks its record first
// (Settled) while its transaction holds a backend of its tier: the check
// must not wait for another backend of that pool, which may have none
// left (a pool of one, or every backend held by such a write).
func TestSettledNeedsNoSecondBackendOfTheTier(t *testing.T) {
	s := openWith(t, 1, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txn, err := s.BeginWrite(ctx, qos.Normal, SessionKey{LSID: []byte(t.Name())}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback(context.Background())
	on := At(qos.Normal)
	on.Txn = txn
	c, err := s.CollectionForWrite(ctx, on, "st", t.Name())
	if err != nil {
		t.Fatalf("creating the collection in a retryable write: %v", err)
	}
	if _, werrs, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil || len(werrs) > 0 {
		t.Fatalf("insert: %v %v", err, werrs)
	}
	if prev, err := txn.CommitWrite(ctx, false, []byte("r")); err != nil || prev != nil {
		t.Fatalf("commit: %+v %v", prev, err)
	}
}

// A deferred write's implicit transaction is READ COMMITTED whatever the
// server's or role's default, as the BEGIN it does without would have made
// it: a retry racing its first run must wait for it and find its record.
func TestDeferredWriteIsReadCommittedWhateverTheDefault(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, 1, " default_transaction_isolation=serializable")
	if _, err := s.pool(ctx, On{}).Exec(ctx, `DROP TABLE IF EXISTS st_iso; CREATE TABLE st_iso (level text)`); err != nil {
		t.Fatal(err)
	}
	defer s.pool(ctx, On{}).Exec(ctx, `DROP TABLE st_iso`)
	txn, err := s.BeginWrite(ctx, qos.Normal, SessionKey{LSID: []byte(t.Name())}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := txn.deferWrite(`INSERT INTO st_iso VALUES (current_setting('transaction_isolation'))`, nil, 1); !ok {
		t.Fatal("the first write was not deferred")
	}
	if prev, err := txn.CommitWrite(ctx, false, []byte("r")); err != nil || prev != nil {
		t.Fatalf("commit: %+v %v", prev, err)
	}
	var level string
	if err := s.pool(ctx, On{}).QueryRow(ctx, `SELECT level FROM st_iso`).Scan(&level); err != nil || level != "read committed" {
		t.Fatalf("the deferred write ran at %q (%v), want read committed", level, err)
	}
}
