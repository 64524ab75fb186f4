package storage

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Shared WAL flushes: group commit across tiers.
//
// A synchronous commit makes PostgreSQL write and fsync the WAL up to its
// commit record before it answers. While a high-tier client writes back to
// back, every lower-tier commit that flushes on its own puts a flush in
// front of the high tier's next one: the high-tier backend then waits for
// the disk twice (LWLock:WALWrite, then IO:WALSync). A lower-tier write
// given a SharedFlush (On.Shared) instead commits without waiting for its
// flush, as j:false does, and its acknowledgement waits (AwaitFlush) until
// a later synchronous commit has flushed the WAL past it, which the high
// tier's next write does anyway, or after SharedFlushWait it flushes
// itself. The client hears of the write only once it is on disk, as
// before; what changes is who pays for the flush. Other clients may see
// the write up to that flush before it is durable, as MongoDB's own
// writes are visible before its journal is flushed: a crash of PostgreSQL
// in that window loses a write nobody was told had succeeded.
//
// The proof: a synchronous commit that wrote flushed every WAL record
// inserted before its own commit record, so every commit whose reply
// arrived before it was sent. Sequence numbers from one counter order the
// events: a shared commit's ticket is taken when its reply arrives, a
// synchronous commit's number when it is sent. A crash and restart of
// PostgreSQL in between would have discarded WAL that was not flushed, but
// it also ends every backend: so the synchronous commit counts only if its
// backend's connection was made before the ticket (born < ticket < sent).
// A failover, which opens connections to the new primary, is covered the
// same way.

// flushes orders commits against the synchronous commits that made them
// durable.
type flushes struct {
	seq     atomic.Uint64
	waiting atomic.Int32 // len(waiters), read without the lock

	mu      sync.Mutex
	waiters map[*flushWaiter]struct{}
	latest  proof // the synchronous commit with the highest number so far

	shared, forced, failed atomic.Int64
}

// flushWaiter is one request waiting for its shared commits (tickets from
// lo to hi) to be flushed.
type flushWaiter struct {
	lo, hi uint64
	done   chan struct{}
}

// bornKey is where a connection's birth (a sequence number) is kept in
// pgconn's CustomData.
const bornKey = "tierdb.born"

// born records that c was just made (pools' AfterConnect).
func (f *flushes) born(c *pgconn.PgConn) { c.CustomData()[bornKey] = f.seq.Add(1) }

// proof is a synchronous commit: the birth of its connection and its
// number, taken just before it was sent.
type proof struct{ born, sent uint64 }

// sending numbers a synchronous commit about to be sent on c.
func (f *flushes) sending(c *pgconn.PgConn) proof {
	b, ok := c.CustomData()[bornKey].(uint64)
	if !ok {
		b = ^uint64(0) // unknown birth: proves nothing
	}
	return proof{born: b, sent: f.seq.Add(1)}
}

// flushed records that the synchronous commit p succeeded having written,
// and releases the waiters it covers. The latest proof is kept for a
// waiter that registers after it (AwaitFlush).
func (f *flushes) flushed(p proof) {
	f.mu.Lock()
	if p.sent > f.latest.sent {
		f.latest = p
	}
	if f.waiting.Load() == 0 {
		f.mu.Unlock()
		return
	}
	for w := range f.waiters {
		if p.covers(w) {
			f.removeLocked(w)
			close(w.done)
		}
	}
	f.mu.Unlock()
}

func (p proof) covers(w *flushWaiter) bool { return p.born < w.lo && w.hi < p.sent }

func (f *flushes) removeLocked(w *flushWaiter) {
	delete(f.waiters, w)
	f.waiting.Store(int32(len(f.waiters)))
}

// SharedFlush collects the tickets of one request's shared commits
// (On.Shared). It is safe for concurrent use.
type SharedFlush struct {
	mu     sync.Mutex
	lo, hi uint64
}

func (sf *SharedFlush) add(ticket uint64) {
	sf.mu.Lock()
	if sf.lo == 0 {
		sf.lo = ticket
	}
	sf.hi = ticket
	sf.mu.Unlock()
}

// Pending reports whether a shared commit of the request waits for its flush.
func (sf *SharedFlush) Pending() bool {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.lo != 0
}

// committed records a commit that succeeded: with on.Shared, a ticket for
// it if it wrote; synchronous (p from sending), the waiters it releases.
func (s *Store) committed(on On, wrote bool, p proof) {
	switch {
	case on.Async:
		s.asyncCommits.Add(1)
	case on.Shared != nil:
		if wrote {
			on.Shared.add(s.flush.seq.Add(1))
			s.flush.shared.Add(1)
		}
	case wrote:
		s.flush.flushed(p)
	}
}

// SharesFlushes reports whether writes given a SharedFlush wait for
// another commit's flush (Options.SharedFlushWait > 0); without it the
// command layer leaves On.Shared nil and every write flushes its own.
func (s *Store) SharesFlushes() bool { return s.opts.SharedFlushWait > 0 }

// AwaitFlush returns once sf's shared commits are on disk: flushed by
// another synchronous commit within SharedFlushWait, or else by a commit
// of its own (an empty transaction that takes a transaction id, on a
// backend of on's tier). It fails with ErrUnavailable when that cannot be
// proven (PostgreSQL restarted, or the primary changed, since the
// commits: they may be lost) and with ctx's error when ctx ends first;
// the writes' fate is then unknown to the client, as when a connection
// drops before the reply.
func (s *Store) AwaitFlush(ctx context.Context, on On, sf *SharedFlush) error {
	sf.mu.Lock()
	w := &flushWaiter{lo: sf.lo, hi: sf.hi, done: make(chan struct{})}
	sf.mu.Unlock()
	if w.lo == 0 {
		return nil
	}
	f := &s.flush
	f.mu.Lock()
	if f.latest.covers(w) {
		f.mu.Unlock()
		return nil
	}
	if f.waiters == nil {
		f.waiters = map[*flushWaiter]struct{}{}
	}
	f.waiters[w] = struct{}{}
	f.waiting.Store(int32(len(f.waiters)))
	f.mu.Unlock()
	timer := time.NewTimer(s.opts.SharedFlushWait)
	defer timer.Stop()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	case <-timer.C:
	}
	f.mu.Lock()
	_, still := f.waiters[w]
	if still {
		f.removeLocked(w)
	}
	f.mu.Unlock()
	if !still {
		return nil // released meanwhile
	}
	if err := ctx.Err(); err != nil {
		f.failed.Add(1)
		return err
	}
	p, err := s.flushNow(ctx, on)
	switch {
	case err != nil:
		f.failed.Add(1)
		return err
	case !p.covers(w):
		f.failed.Add(1)
		return newErr(ErrUnavailable, "the write was committed, but PostgreSQL restarted or the primary changed before it was known to be on disk; it may be lost")
	}
	f.forced.Add(1)
	f.flushed(p) // whoever else it covers
	return nil
}

// flushNow commits an empty transaction that takes a transaction id, so
// its commit record is flushed synchronously with every record before it.
func (s *Store) flushNow(ctx context.Context, on On) (proof, error) {
	c, err := s.pool(ctx, on).Acquire(ctx)
	if err != nil {
		return proof{}, fromPG(ctx, err)
	}
	defer c.Release()
	p := s.flush.sending(c.Conn().PgConn())
	_, err = c.Exec(ctx, `SELECT set_config('synchronous_commit', 'on', true), pg_current_xact_id()`)
	return p, fromPG(ctx, err)
}

// SharedFlushStats counts shared commits, the flushes their waits had to
// make themselves, and the waits that failed.
func (s *Store) SharedFlushStats() (shared, forced, failed int64) {
	return s.flush.shared.Load(), s.flush.forced.Load(), s.flush.failed.Load()
}
