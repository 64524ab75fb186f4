package storage

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// flushStore is a Store with only what AwaitFlush's waiting needs; a wait
// that ends in a flush of its own would need PostgreSQL (tests/ covers it).
func flushStore(wait time.Duration) *Store {
	return &Store{opts: Options{SharedFlushWait: wait}}
}

// commitShared is a shared commit of sf: numbered when sent, ticketed
// when its reply arrives.
func commitShared(s *Store, sf *SharedFlush) {
	s.committed(On{Shared: sf}, true, proof{sent: s.flush.seq.Add(1)})
}

// syncCommit is a synchronous commit that wrote, on a connection born
// before it was sent.
func syncCommit(s *Store, born uint64) proof {
	p := proof{born: born, sent: s.flush.seq.Add(1)}
	s.committed(On{}, true, p)
	return p
}

func TestSharedCommitIsReleasedByALaterSynchronousCommit(t *testing.T) {
	s := flushStore(time.Minute)
	born := s.flush.seq.Add(1) // a connection made before everything
	sf := &SharedFlush{}
	commitShared(s, sf)
	commitShared(s, sf)
	if !sf.Pending() {
		t.Fatal("two shared commits, nothing pending")
	}
	done := make(chan error, 1)
	go func() { done <- s.AwaitFlush(context.Background(), On{}, sf) }()
	time.Sleep(10 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("released before any flush: %v", err)
	default:
	}
	syncCommit(s, born)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a synchronous commit after both shared ones did not release the wait")
	}
	if shared, forced, failed := s.SharedFlushStats(); shared != 2 || forced != 0 || failed != 0 {
		t.Fatalf("stats %d/%d/%d, want 2/0/0", shared, forced, failed)
	}
}

func TestWhatDoesNotProveAFlush(t *testing.T) {
	s := flushStore(time.Minute)
	born := s.flush.seq.Add(1)
	sf := &SharedFlush{}
	commitShared(s, sf)
	early := proof{born: born, sent: sf.hi} // sent before the first reply
	commitShared(s, sf)
	w := &flushWaiter{lo: sf.lo, hi: sf.hi}
	for name, p := range map[string]proof{
		"sent before the last reply":                         {born: born, sent: sf.hi - 1},
		"sent before the first reply":                        early,
		"on a connection made after the first commit's send": {born: sf.lo + 1, sent: s.flush.seq.Add(1)},
		"on a connection made at its send":                   {born: sf.lo, sent: s.flush.seq.Add(1)},
		"on a connection of unknown birth":                   {born: ^uint64(0), sent: s.flush.seq.Add(1)},
	} {
		if p.covers(w) {
			t.Errorf("%s covers %d..%d: %+v", name, w.lo, w.hi, p)
		}
	}
	if p := (proof{born: born, sent: s.flush.seq.Add(1)}); !p.covers(w) {
		t.Errorf("an old connection's commit sent after both replies does not cover them: %+v", p)
	}
}

func TestSharedFlushKeepsTheWidestSpan(t *testing.T) {
	sf := &SharedFlush{}
	sf.add(10, 12)
	sf.add(7, 9) // a statement sent earlier whose reply came later
	sf.add(11, 14)
	if sf.lo != 7 || sf.hi != 14 {
		t.Fatalf("span %d..%d, want 7..14", sf.lo, sf.hi)
	}
}

func TestAFlushBeforeTheWaitStartsCounts(t *testing.T) {
	s := flushStore(time.Minute)
	born := s.flush.seq.Add(1)
	sf := &SharedFlush{}
	commitShared(s, sf)
	syncCommit(s, born) // the high tier's commit lands before the write's reply is built
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.AwaitFlush(ctx, On{}, sf); err != nil {
		t.Fatalf("the latest flush already covered the write: %v", err)
	}
}

func TestNothingSharedNothingToWaitFor(t *testing.T) {
	s := flushStore(time.Minute)
	sf := &SharedFlush{}
	s.committed(On{Shared: sf}, false, proof{}) // an update that matched nothing
	if sf.Pending() {
		t.Fatal("a commit that wrote nothing left a ticket")
	}
	if err := s.AwaitFlush(context.Background(), On{}, sf); err != nil {
		t.Fatal(err)
	}
}

func TestAWaitEndsWithItsContext(t *testing.T) {
	s := flushStore(time.Minute)
	sf := &SharedFlush{}
	commitShared(s, sf)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.AwaitFlush(ctx, On{}, sf); err == nil {
		t.Fatal("a wait whose context ended reported the write durable")
	}
	if _, _, failed := s.SharedFlushStats(); failed != 1 {
		t.Fatalf("failed = %d, want 1", failed)
	}
	if s.flush.waiting.Load() != 0 {
		t.Fatal("the ended wait is still registered")
	}
}

// TestAForcedFlushPutsSharedCommitsOnDisk runs against PostgreSQL: with
// the WAL writer made slow, a shared commit stays ahead of the flushed
// WAL until its wait, which no other commit ends, flushes it itself.
func TestAForcedFlushPutsSharedCommitsOnDisk(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{ConnString: connString, SharedFlushWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin := s.Nodes()[0].probe
	for _, q := range []string{`ALTER SYSTEM SET wal_writer_delay = '10s'`, `SELECT pg_reload_conf()`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, `ALTER SYSTEM RESET wal_writer_delay`)
		_, _ = admin.Exec(ctx, `SELECT pg_reload_conf()`)
	})
	time.Sleep(300 * time.Millisecond) // the WAL writer's current sleep ends
	c, err := s.CollectionForWrite(ctx, On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	lsn := func(f string) (n uint64) {
		if err := admin.QueryRow(ctx, `SELECT `+f+`() - '0/0'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 5 {
		sf := &SharedFlush{}
		on := On{Shared: sf}
		if _, _, err := s.Insert(ctx, on, c, []Doc{doc(t, bson.D{{Key: "_id", Value: int32(i)}})}, true); err != nil {
			t.Fatal(err)
		}
		written := lsn("pg_current_wal_insert_lsn")
		if flushed := lsn("pg_current_wal_flush_lsn"); flushed >= written {
			t.Fatalf("insert %d: WAL flushed to %d ≥ %d before its wait: the commit was not deferred", i, flushed, written)
		}
		if err := s.AwaitFlush(ctx, on, sf); err != nil {
			t.Fatal(err)
		}
		if flushed := lsn("pg_current_wal_flush_lsn"); flushed < written {
			t.Fatalf("insert %d acknowledged with the WAL flushed to %d < %d", i, flushed, written)
		}
	}
	if shared, forced, failed := s.SharedFlushStats(); shared != 5 || forced != 5 || failed != 0 {
		t.Fatalf("shared/forced/failed %d/%d/%d, want 5/5/0", shared, forced, failed)
	}
}
