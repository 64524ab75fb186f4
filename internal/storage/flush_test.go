package storage

import (
	"context"
	"testing"
	"time"
)

// flushStore is a Store with only what AwaitFlush's waiting needs; a wait
// that ends in a flush of its own would need PostgreSQL (tests/ covers it).
func flushStore(wait time.Duration) *Store {
	return &Store{opts: Options{SharedFlushWait: wait}}
}

// commitShared is a shared commit of sf: its ticket.
func commitShared(s *Store, sf *SharedFlush) {
	s.committed(On{Shared: sf}, true, proof{})
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
	early := proof{born: born, sent: s.flush.seq.Load() - 1} // sent before the ticket
	commitShared(s, sf)
	young := s.flush.seq.Add(1) // a connection made after the first ticket: PostgreSQL may have restarted
	w := &flushWaiter{lo: sf.lo, hi: sf.hi}
	for name, p := range map[string]proof{
		"sent before the last ticket":           {born: born, sent: sf.hi - 1},
		"sent before the first ticket":          early,
		"on a connection younger than a ticket": {born: young, sent: s.flush.seq.Add(1)},
		"on a connection of unknown birth":      {born: ^uint64(0), sent: s.flush.seq.Add(1)},
	} {
		if p.covers(w) {
			t.Errorf("%s covers tickets %d..%d: %+v", name, w.lo, w.hi, p)
		}
	}
	if p := (proof{born: born, sent: s.flush.seq.Add(1)}); !p.covers(w) {
		t.Errorf("an old connection's commit sent after both tickets does not cover them: %+v", p)
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
