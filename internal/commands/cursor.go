package commands

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"tierdb/internal/exec"
)

// closer is an exec.Source holding something to let go of when its cursor
// goes (a change stream's place in the hub).
type closer interface{ Close() }

func closeSource(src exec.Source) {
	if c, ok := src.(closer); ok {
		c.Close()
	}
}

// cursor is an open server-side cursor. It pins no PostgreSQL backend: a
// scan cursor only remembers where it stopped (keyset pagination).
type cursor struct {
	id int64
	ns string
	// owner is the user who opened it ("" without authentication): only
	// that user may continue or kill it, as in MongoDB.
	owner    string
	mu       sync.Mutex // one getMore at a time
	src      exec.Source
	lastUsed atomic.Int64 // unix nanoseconds
	// timeLeft is what remains of the maxTimeMS of the command that
	// opened the cursor (0: no limit), guarded by mu: MongoDB's limit
	// covers the processing of every getMore (argcheck.go).
	timeLeft time.Duration
	origin   *cursorOrigin // for $currentOp (idlecursors.go)
}

type cursorRegistry struct {
	timeout  time.Duration
	mu       sync.Mutex
	m        map[int64]*cursor
	timedOut atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
}

func newCursorRegistry(timeout time.Duration) *cursorRegistry {
	r := &cursorRegistry{timeout: timeout, m: map[int64]*cursor{}, stop: make(chan struct{})}
	go r.reap()
	return r
}

func (r *cursorRegistry) close() { r.stopOnce.Do(func() { close(r.stop) }) }

// reap closes cursors idle for longer than the timeout.
func (r *cursorRegistry) reap() {
	period := min(r.timeout/4, time.Minute)
	t := time.NewTicker(max(period, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			limit := now.Add(-r.timeout).UnixNano()
			r.mu.Lock()
			for id, c := range r.m {
				if c.lastUsed.Load() < limit {
					delete(r.m, id)
					r.timedOut.Add(1)
					closeSource(c.src)
				}
			}
			r.mu.Unlock()
		}
	}
}

func (r *cursorRegistry) add(ns, owner string, src exec.Source, origin *cursorOrigin) *cursor {
	c := &cursor{ns: ns, owner: owner, src: src, origin: origin}
	c.lastUsed.Store(time.Now().UnixNano())
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		// Positive, never 0 (which means "no cursor"), hard to guess.
		c.id = rand.Int64N(1<<62) + 1
		if _, taken := r.m[c.id]; !taken {
			r.m[c.id] = c
			return c
		}
	}
}

func (r *cursorRegistry) get(id int64) *cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *cursorRegistry) remove(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[id]
	delete(r.m, id)
	if ok {
		closeSource(c.src)
	}
	return ok
}

// removeOwned removes cursor id if it belongs to namespace ns and owner.
func (r *cursorRegistry) removeOwned(id int64, ns, owner string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[id]
	if !ok || c.ns != ns || c.owner != owner {
		return false
	}
	delete(r.m, id)
	closeSource(c.src)
	return true
}

// cursorOwner names the session's user for cursor ownership.
func cursorOwner(s *Session) string {
	if s == nil || s.User == nil {
		return ""
	}
	return s.User.User.Name.String()
}

func (r *cursorRegistry) killNamespace(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.m {
		if _, stream := c.src.(*exec.ChangeSource); c.ns == ns && !stream {
			// A change stream outlives its collection: it reports
			// the drop, then invalidates.
			delete(r.m, id)
		}
	}
}

// list is the open cursors, in no order.
func (r *cursorRegistry) list() []*cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*cursor, 0, len(r.m))
	for _, c := range r.m {
		out = append(out, c)
	}
	return out
}

func (r *cursorRegistry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

func nowNanos() int64 { return time.Now().UnixNano() }
