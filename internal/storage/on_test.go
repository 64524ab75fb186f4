package storage

import (
	"context"
	"testing"

	"tierdb/internal/qos"
)

// The zero On runs at the Normal tier (qos.High is Tier's zero value), and
// At keeps every tier, High included.
func TestOnTier(t *testing.T) {
	if got := (On{}).Tier(); got != qos.Normal {
		t.Fatalf("zero On runs at %s, want normal", got)
	}
	for tier := qos.Tier(0); tier < qos.NumTiers; tier++ {
		if got := At(tier).Tier(); got != tier {
			t.Fatalf("At(%s).Tier() = %s", tier, got)
		}
	}
	on := At(qos.High)
	on.Async = true
	if on.Tier() != qos.High || on.Node != nil || on.Txn != nil {
		t.Fatalf("setting Async changed the rest: %+v", on)
	}
}

// Only a multi-document transaction counts as one for InTransaction, not a
// retryable write's own.
func TestOnInTransaction(t *testing.T) {
	if (On{}).InTransaction() {
		t.Fatal("no Txn, yet in a transaction")
	}
	if (On{Txn: &Txn{}}).InTransaction() {
		t.Fatal("a retryable write's transaction counts as a multi-document one")
	}
	if !(On{Txn: &Txn{snapshot: true}}).InTransaction() {
		t.Fatal("a snapshot transaction does not count")
	}
}

// TestCommitOfAnAbortedTransactionFails: PostgreSQL answers COMMIT of a
// transaction that an error aborted with ROLLBACK and no error; a
// statement that failed outside Txn's savepoints must not turn into a
// commit.
func TestCommitOfAnAbortedTransactionFails(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	txn, err := s.Begin(ctx, qos.Normal, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Exec(ctx, "SELECT 1"); err != nil { // sends BEGIN
		t.Fatal(err)
	}
	if _, err := txn.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("division by zero succeeded")
	}
	if _, err := txn.Commit(ctx, false); !IsCode(err, ErrWriteConflict) {
		t.Fatalf("commit of an aborted transaction: %v, want a write conflict", err)
	}
}
