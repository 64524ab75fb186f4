package session

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fakeTxn struct{ aborts atomic.Int32 }

func (f *fakeTxn) Abort() { f.aborts.Add(1) }

func newRegistry() (*Registry, *fakeClock) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	return NewRegistry(c.now, 30*time.Minute, time.Minute), c
}

var id1 = ID{UUID: "0123456789abcdef", User: "admin.alice"}

func TestParseLSID(t *testing.T) {
	good := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("0123456789abcdef")}}}
	if u, err := ParseLSID(good); err != nil || u != "0123456789abcdef" {
		t.Fatalf("ParseLSID(good) = %q, %v", u, err)
	}
	for _, bad := range []any{
		"x",
		bson.D{{Key: "id", Value: "x"}},
		bson.D{{Key: "id", Value: bson.Binary{Subtype: 0, Data: []byte("0123456789abcdef")}}},
	} {
		if _, err := ParseLSID(bad); !isCode(err, mongoerr.TypeMismatch) {
			t.Errorf("ParseLSID(%v) = %v, want TypeMismatch", bad, err)
		}
	}
	for _, bad := range []any{bson.D{}, bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("short")}}}} {
		if _, err := ParseLSID(bad); !isCode(err, mongoerr.BadValue) {
			t.Errorf("ParseLSID(%v) = %v, want BadValue", bad, err)
		}
	}
}

func isCode(err error, c mongoerr.Code) bool {
	e, ok := mongoerr.As(err)
	return ok && e.Code == c
}

// The lifetime limit aborts an idle transaction at the next Reap, and one
// whose session is in use when it ends at Release (its command cancelled).
func TestLifetimeLimit(t *testing.T) {
	r, clock := newRegistry()
	s, _ := r.Acquire(context.Background(), id1, nil)
	tx := &fakeTxn{}
	r.Start(s, 1, tx)
	r.Release(s)
	clock.add(59 * time.Second)
	r.Reap()
	if tx.aborts.Load() != 0 {
		t.Fatal("aborted before its lifetime ended")
	}
	clock.add(time.Second)
	r.Reap()
	if tx.aborts.Load() != 1 {
		t.Fatal("not aborted at its lifetime")
	}
	s, _ = r.Acquire(context.Background(), id1, nil)
	if s.State != Aborted || !s.Expired {
		t.Fatalf("state %v expired %v, want Aborted, expired", s.State, s.Expired)
	}
	// Busy at the limit: the command is cancelled, the abort follows at Release.
	tx2 := &fakeTxn{}
	r.Start(s, 2, tx2)
	r.Release(s)
	cancelled := make(chan struct{})
	s, _ = r.Acquire(context.Background(), id1, func() { close(cancelled) })
	clock.add(time.Minute)
	r.Reap()
	<-cancelled
	if tx2.aborts.Load() != 0 {
		t.Fatal("aborted under a running command")
	}
	r.Release(s)
	if tx2.aborts.Load() != 1 || s.State != Aborted {
		t.Fatal("not aborted when the running command ended")
	}
}

// A session runs one command at a time; a waiter whose context ends gives up.
func TestOneCommandAtATime(t *testing.T) {
	r, _ := newRegistry()
	s, _ := r.Acquire(context.Background(), id1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Acquire(ctx, id1, nil); err == nil {
		t.Fatal("a second command ran beside the first")
	}
	got := make(chan *Session)
	go func() {
		s2, _ := r.Acquire(context.Background(), id1, nil)
		got <- s2
	}()
	r.Release(s)
	if s2 := <-got; s2 != s {
		t.Fatal("the waiter got another session")
	} else {
		r.Release(s2)
	}
}

// Other users' sessions with the same lsid are other sessions.
func TestSessionsAreKeyedByUser(t *testing.T) {
	r, _ := newRegistry()
	a, _ := r.Acquire(context.Background(), id1, nil)
	b, _ := r.Acquire(context.Background(), ID{UUID: id1.UUID, User: "admin.bob"}, nil)
	if a == b {
		t.Fatal("two users share one session")
	}
	r.Release(a)
	r.Release(b)
}

// Ending sessions aborts their transactions; idle ones are forgotten.
func TestEndAndIdleExpiry(t *testing.T) {
	r, clock := newRegistry()
	s, _ := r.Acquire(context.Background(), id1, nil)
	tx := &fakeTxn{}
	r.Start(s, 1, tx)
	r.Release(s)
	r.End([]ID{id1})
	if tx.aborts.Load() != 1 || r.Len() != 0 {
		t.Fatalf("End: aborts %d, sessions %d", tx.aborts.Load(), r.Len())
	}
	s, _ = r.Acquire(context.Background(), id1, nil)
	r.Release(s)
	clock.add(29 * time.Minute)
	r.Touch([]ID{id1})
	clock.add(29 * time.Minute)
	r.Reap()
	if r.Len() != 1 {
		t.Fatal("a refreshed session expired")
	}
	clock.add(2 * time.Minute)
	r.Reap()
	if r.Len() != 0 {
		t.Fatal("an idle session was kept")
	}
}

// Many goroutines on many sessions with reaping and ending in between: no
// race, and every transaction is aborted exactly once at most.
func TestConcurrentUse(t *testing.T) {
	r, clock := newRegistry()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := ID{UUID: string(rune('a' + g%3)), User: "u"}
			for i := range 200 {
				s, err := r.Acquire(context.Background(), id, func() {})
				if err != nil {
					t.Error(err)
					return
				}
				if s.State != Active {
					tx := &fakeTxn{}
					r.Start(s, int64(i), tx)
				} else if i%5 == 0 {
					s.Abort()
				}
				r.Release(s)
			}
		}()
	}
	for range 100 {
		clock.add(time.Second)
		r.Reap()
		r.EndMatching(func(id ID) bool { return id.UUID == "a" })
	}
	wg.Wait()
}

// A newer number outside the transaction aborts the older open one.
func TestSupersede(t *testing.T) {
	r, _ := newRegistry()
	if err := r.Supersede(context.Background(), id1, 5); err != nil || r.Len() != 0 {
		t.Fatalf("unknown session: %v, %d sessions", err, r.Len())
	}
	s, _ := r.Acquire(context.Background(), id1, nil)
	tx := &fakeTxn{}
	r.Start(s, 3, tx)
	r.Release(s)
	_ = r.Supersede(context.Background(), id1, 3)
	if tx.aborts.Load() != 0 {
		t.Fatal("the same number aborted the transaction")
	}
	_ = r.Supersede(context.Background(), id1, 4)
	if tx.aborts.Load() != 1 {
		t.Fatal("a newer number left the transaction open")
	}
}

// Idle sessions: a transaction open between statements is listed; one
// whose statement runs, one ended, or one past its lifetime is not.
func TestIdleTransactions(t *testing.T) {
	r, clock := newRegistry()
	ctx := context.Background()
	s, err := r.Acquire(ctx, id1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Start(s, 7, &fakeTxn{})
	if got := r.IdleTransactions(); len(got) != 0 {
		t.Errorf("while its statement runs: %v", got)
	}
	r.Release(s)
	clock.add(time.Second)
	got := r.IdleTransactions()
	if len(got) != 1 || got[0].ID != id1 || got[0].TxnNumber != 7 || !got[0].Started.Equal(time.Unix(1000, 0)) || !got[0].IdleSince.Equal(time.Unix(1000, 0)) {
		t.Fatalf("idle: %+v", got)
	}
	clock.add(time.Minute)
	if got := r.IdleTransactions(); len(got) != 0 {
		t.Errorf("past its lifetime: %v", got)
	}
	s, _ = r.Acquire(ctx, id1, nil)
	r.Start(s, 8, &fakeTxn{})
	s.Abort()
	r.Release(s)
	if got := r.IdleTransactions(); len(got) != 0 {
		t.Errorf("aborted: %v", got)
	}
}
