package storage

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/qos"
)

// A retryable write's claim rides in front of its first statement: the
// first run of a txnNumber claims it and writes; a second run of the same
// number (a retry) or of an older one loses the claim, its statement does
// not run, and Claim returns the session's record.
func TestClaimRidesWithTheFirstStatement(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	c, err := s.CollectionForWrite(ctx, On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	k := SessionKey{LSID: []byte(t.Name()), User: ""}
	insert := func(n int64, id string) (*Record, error) {
		t.Helper()
		txn, err := s.BeginRecorded(ctx, qos.Normal, false, k, n)
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Rollback(ctx)
		on := At(qos.Normal)
		on.Txn = txn
		_, werrs, ierr := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: id}})}, true)
		prev, err := txn.Claim(ctx)
		if err != nil || prev != nil {
			return prev, err
		}
		if ierr != nil || len(werrs) > 0 {
			t.Fatalf("insert %s: %v %v", id, ierr, werrs)
		}
		return nil, txn.CommitRecorded(ctx, false, k, []byte("reply "+id))
	}
	if prev, err := insert(5, "first"); err != nil || prev != nil {
		t.Fatalf("first run: %v, %+v", err, prev)
	}
	for _, n := range []int64{5, 4} {
		prev, err := insert(n, "retry")
		if err != nil {
			t.Fatal(err)
		}
		if prev == nil || prev.TxnNumber != 5 || string(prev.Reply) != "reply first" {
			t.Fatalf("txnNumber %d again: record %+v, want number 5 with the first reply", n, prev)
		}
	}
	if n, err := s.Count(ctx, At(qos.Normal), c, "", nil); err != nil || n != 1 {
		t.Fatalf("%d documents (%v), want only the first run's", n, err)
	}

	// A claim no statement carried is sent by Claim itself.
	txn, err := s.BeginRecorded(ctx, qos.Normal, false, k, 5)
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := txn.Claim(ctx); err != nil || prev == nil || prev.TxnNumber != 5 {
		t.Fatalf("claim without a statement: %+v, %v", prev, err)
	}
	txn, err = s.BeginRecorded(ctx, qos.Normal, false, k, 6)
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := txn.Claim(ctx); err != nil || prev != nil {
		t.Fatalf("claim of a new number without a statement: %+v, %v", prev, err)
	}
	txn.Rollback(ctx)
	if r, err := s.LoadRecord(ctx, qos.Normal, k); err != nil || r.TxnNumber != 5 {
		t.Fatalf("a rolled back claim stays: %+v, %v", r, err)
	}
}

// A transaction that never sent a statement ends without a round trip and
// gives its backend back.
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
