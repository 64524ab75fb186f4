package auth

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// Throttle slows down password guessing. It counts failed authentications
// per user (db.user, whether or not the user exists, so that throttling
// tells nothing about who exists) and per client address. Once a user has
// failed UserFailures times within Window, or an address PeerFailures
// times, further attempts are refused without looking at the password for
// a while: Window the first time, twice as long each further time the same
// user or address is throttled while it is remembered, at most MaxBackoff.
// The command layer answers a refused attempt exactly as a wrong password
// (AuthenticationFailed), so a throttled answer tells nothing either.
//
// An attempt is reserved (Begin) before its proof is checked and settled
// (Attempt.Done) after, so that concurrent conversations cannot get more
// than UserFailures guesses past the check between two lockouts. A
// successful authentication forgets the user's failures; an address's are
// only forgotten with time, so that a client holding one valid account
// cannot reset its address's count while it guesses other users'
// passwords.
//
// Memory is bounded whatever clients send: each table holds at most
// MaxEntries keys (the least recently seen is forgotten first, preferring
// keys not throttled now), keys longer than 64 bytes are kept as their
// SHA-256, and a key quiet for MaxBackoff is forgotten with its history.
//
// The logic is pure: time comes from Options.Now, nothing is logged here.
// A nil *Throttle (throttling off) refuses nothing and counts nothing.
type Throttle struct {
	opts  ThrottleOptions
	mu    sync.Mutex
	users keyTable
	peers keyTable
	stats ThrottleStats
}

// ThrottleOptions configure a Throttle.
type ThrottleOptions struct {
	// UserFailures is how many failed authentications of one user within
	// Window throttle that user. 0 turns throttling off altogether
	// (NewThrottle returns nil).
	UserFailures int
	// PeerFailures is how many failed authentications from one client
	// address (of any users) within Window throttle that address; 0: no
	// per-address throttling.
	PeerFailures int
	// Window is the span failures are counted over and how long the first
	// throttling lasts; default 1 minute.
	Window time.Duration
	// MaxBackoff caps the doubling of the throttled period; default
	// 16 × Window (never less than Window).
	MaxBackoff time.Duration
	// MaxEntries caps the users and the addresses tracked (each); default
	// 10000.
	MaxEntries int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

const (
	defaultThrottleWindow     = time.Minute
	defaultThrottleMaxEntries = 10000
	// maxKeyLen: longer keys (user names are the client's choice) are
	// kept as a hash, so an entry's size is bounded.
	maxKeyLen = 64
	// evictScan is how many of the least recently seen entries eviction
	// looks at for one that is not throttled now.
	evictScan = 8
)

// By names what an attempt was throttled by.
type By string

const (
	ByUser By = "user"
	ByPeer By = "peer"
)

// Verdict is the throttle's answer to an attempt.
type Verdict struct {
	Throttled bool
	// By is ByUser when the user is throttled, else ByPeer.
	By By
	// Until is when the throttling that refused the attempt ends (zero
	// when the attempt was refused because others in flight already use
	// up the failures allowed).
	Until time.Time
}

// Lockout reports that a user or an address has just become throttled.
type Lockout struct {
	By       By
	Key      string // db.user or the address (a hash for very long names)
	For      time.Duration
	Failures int // failures within the window that triggered it
}

// Outcome settles an attempt.
type Outcome int

const (
	// Released: the attempt neither succeeded nor failed a password check
	// (a malformed message): it counts for nothing.
	Released Outcome = iota
	Succeeded
	Failed
)

// ThrottleStats are the throttle's counters and the size of its tables.
type ThrottleStats struct {
	// RefusedUser and RefusedPeer count attempts refused because the user,
	// or else the address, was throttled.
	RefusedUser, RefusedPeer int64
	// LockoutsUser and LockoutsPeer count the times a user or an address
	// became throttled.
	LockoutsUser, LockoutsPeer int64
	// TrackedUsers and TrackedPeers are the keys remembered now.
	TrackedUsers, TrackedPeers int
	// Evicted counts keys forgotten early because a table was full.
	Evicted int64
}

// NewThrottle returns a throttle, or nil (throttling off) when
// opts.UserFailures <= 0.
func NewThrottle(opts ThrottleOptions) *Throttle {
	if opts.UserFailures <= 0 {
		return nil
	}
	if opts.PeerFailures < 0 {
		opts.PeerFailures = 0
	}
	if opts.Window <= 0 {
		opts.Window = defaultThrottleWindow
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 16 * opts.Window
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.Window)
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = defaultThrottleMaxEntries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t := &Throttle{opts: opts}
	t.users.init(opts.UserFailures, opts)
	t.peers.init(opts.PeerFailures, opts)
	return t
}

// Options returns the throttle's settings, defaults filled in.
func (t *Throttle) Options() ThrottleOptions {
	if t == nil {
		return ThrottleOptions{}
	}
	return t.opts
}

// Check tells whether an attempt by user from peer would be refused now,
// and counts it as refused if so. Either key may be "" (unknown).
func (t *Throttle) Check(user, peer string) Verdict {
	if t == nil {
		return Verdict{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	v := t.verdict(user, peer, now)
	if v.Throttled {
		t.refused(v, user, peer, now)
	}
	return v
}

// Attempt is a reserved attempt; settle it with Done.
type Attempt struct {
	t          *Throttle
	user, peer string
	done       bool
}

// Begin reserves an attempt by user from peer before its proof is checked.
// When the user or the address is throttled, or the attempts in flight
// already use up what is allowed, it returns a refusal (counted) and a nil
// Attempt.
func (t *Throttle) Begin(user, peer string) (*Attempt, Verdict) {
	if t == nil {
		return nil, Verdict{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	v := t.verdict(user, peer, now)
	if v.Throttled {
		t.refused(v, user, peer, now)
		return nil, v
	}
	t.users.reserve(user, now, &t.stats)
	t.peers.reserve(peer, now, &t.stats)
	return &Attempt{t: t, user: user, peer: peer}, v
}

// Done settles the attempt (a nil or settled Attempt does nothing) and
// reports the lockouts it started, for the log.
func (a *Attempt) Done(o Outcome) []Lockout {
	if a == nil || a.done || a.t == nil {
		return nil
	}
	a.done = true
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	t.users.release(a.user)
	t.peers.release(a.peer)
	var out []Lockout
	switch o {
	case Succeeded:
		t.users.forget(a.user)
	case Failed:
		if l, ok := t.users.fail(a.user, now, &t.stats); ok {
			l.By = ByUser
			t.stats.LockoutsUser++
			out = append(out, l)
		}
		if l, ok := t.peers.fail(a.peer, now, &t.stats); ok {
			l.By = ByPeer
			t.stats.LockoutsPeer++
			out = append(out, l)
		}
	}
	return out
}

// Stats returns the counters; the zero value when throttling is off.
func (t *Throttle) Stats() ThrottleStats {
	if t == nil {
		return ThrottleStats{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.TrackedUsers, s.TrackedPeers = t.users.len(), t.peers.len()
	return s
}

func (t *Throttle) verdict(user, peer string, now time.Time) Verdict {
	if until, ok := t.users.blocked(user, now); ok {
		return Verdict{Throttled: true, By: ByUser, Until: until}
	}
	if until, ok := t.peers.blocked(peer, now); ok {
		return Verdict{Throttled: true, By: ByPeer, Until: until}
	}
	return Verdict{}
}

// refused counts a refusal, and keeps the keys it names remembered (a
// client that keeps trying keeps its history).
func (t *Throttle) refused(v Verdict, user, peer string, now time.Time) {
	if v.By == ByUser {
		t.stats.RefusedUser++
	} else {
		t.stats.RefusedPeer++
	}
	t.users.touch(user, now)
	t.peers.touch(peer, now)
}

// keyTable tracks the failures of one kind of key (users or addresses).
type keyTable struct {
	limit      int // failures within window that throttle; 0: table off
	window     time.Duration
	maxBackoff time.Duration
	maxEntries int
	m          map[string]*throttleEntry
	lru        list.List // of *throttleEntry, most recently seen first
}

type throttleEntry struct {
	key         string
	failures    int       // in the current window
	windowStart time.Time // of the current window
	pending     int       // attempts reserved and not yet settled
	level       int       // throttlings so far: the next lasts window << level
	lockedUntil time.Time
	lastSeen    time.Time
	elem        *list.Element
}

func (k *keyTable) init(limit int, o ThrottleOptions) {
	k.limit, k.window, k.maxBackoff, k.maxEntries = limit, o.Window, o.MaxBackoff, o.MaxEntries
	k.m = map[string]*throttleEntry{}
	k.lru.Init()
}

func (k *keyTable) len() int { return len(k.m) }

// normKey is the key as stored: long keys become their hash.
func normKey(key string) string {
	if len(key) <= maxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// lookup returns the live entry of key, forgetting it first if it has
// expired; nil when there is none.
func (k *keyTable) lookup(key string, now time.Time) *throttleEntry {
	if k.limit <= 0 || key == "" {
		return nil
	}
	e := k.m[normKey(key)]
	if e != nil && k.expired(e, now) {
		k.remove(e)
		return nil
	}
	return e
}

// expired: quiet for maxBackoff (which is at least as long as any
// throttling, so the entry is not throttled) and nothing in flight.
func (k *keyTable) expired(e *throttleEntry, now time.Time) bool {
	return e.pending == 0 && now.Sub(e.lastSeen) >= k.maxBackoff && !now.Before(e.lockedUntil)
}

// blocked reports whether key is throttled now, or has as many attempts
// in flight as it has failures left.
func (k *keyTable) blocked(key string, now time.Time) (time.Time, bool) {
	e := k.lookup(key, now)
	if e == nil {
		return time.Time{}, false
	}
	if now.Before(e.lockedUntil) {
		return e.lockedUntil, true
	}
	k.rollWindow(e, now)
	return time.Time{}, e.failures+e.pending >= k.limit
}

// rollWindow starts a new counting window once the current one is over.
func (k *keyTable) rollWindow(e *throttleEntry, now time.Time) {
	if now.Sub(e.windowStart) >= k.window {
		e.failures, e.windowStart = 0, now
	}
}

// entry returns key's entry, creating it (and making room) if needed.
func (k *keyTable) entry(key string, now time.Time, st *ThrottleStats) *throttleEntry {
	if e := k.lookup(key, now); e != nil {
		e.lastSeen = now
		k.lru.MoveToFront(e.elem)
		return e
	}
	k.sweep(now)
	if len(k.m) >= k.maxEntries {
		k.evict(now)
		st.Evicted++
	}
	e := &throttleEntry{key: normKey(key), windowStart: now, lastSeen: now}
	e.elem = k.lru.PushFront(e)
	k.m[e.key] = e
	return e
}

// sweep forgets expired entries from the least recently seen end.
func (k *keyTable) sweep(now time.Time) {
	for i := 0; i < evictScan; i++ {
		b := k.lru.Back()
		if b == nil {
			return
		}
		e := b.Value.(*throttleEntry)
		if !k.expired(e, now) {
			return
		}
		k.remove(e)
	}
}

// evict forgets one entry: the least recently seen one that is not
// throttled now among the last few, else the least recently seen.
func (k *keyTable) evict(now time.Time) {
	victim := k.lru.Back()
	for el, i := victim, 0; el != nil && i < evictScan; el, i = el.Prev(), i+1 {
		if e := el.Value.(*throttleEntry); !now.Before(e.lockedUntil) && e.pending == 0 {
			victim = el
			break
		}
	}
	if victim != nil {
		k.remove(victim.Value.(*throttleEntry))
	}
}

func (k *keyTable) remove(e *throttleEntry) {
	k.lru.Remove(e.elem)
	delete(k.m, e.key)
}

func (k *keyTable) touch(key string, now time.Time) {
	if e := k.lookup(key, now); e != nil {
		e.lastSeen = now
		k.lru.MoveToFront(e.elem)
	}
}

func (k *keyTable) reserve(key string, now time.Time, st *ThrottleStats) {
	if k.limit <= 0 || key == "" {
		return
	}
	k.entry(key, now, st).pending++
}

func (k *keyTable) release(key string) {
	if k.limit <= 0 || key == "" {
		return
	}
	if e := k.m[normKey(key)]; e != nil && e.pending > 0 {
		e.pending--
	}
}

func (k *keyTable) forget(key string) {
	if k.limit <= 0 || key == "" {
		return
	}
	if e := k.m[normKey(key)]; e != nil {
		if e.pending > 0 {
			// Others in flight still hold reservations: keep the entry,
			// without its failures or history.
			e.failures, e.level, e.lockedUntil = 0, 0, time.Time{}
			return
		}
		k.remove(e)
	}
}

// fail records a failure; it reports a lockout when this one throttles
// the key.
func (k *keyTable) fail(key string, now time.Time, st *ThrottleStats) (Lockout, bool) {
	if k.limit <= 0 || key == "" {
		return Lockout{}, false
	}
	e := k.entry(key, now, st)
	if now.Before(e.lockedUntil) {
		// Already throttled (by an attempt that ended meanwhile).
		return Lockout{}, false
	}
	k.rollWindow(e, now)
	e.failures++
	if e.failures < k.limit {
		return Lockout{}, false
	}
	d := k.backoff(e.level)
	l := Lockout{Key: e.key, For: d, Failures: e.failures}
	e.level++
	e.lockedUntil = now.Add(d)
	e.failures, e.windowStart = 0, e.lockedUntil
	return l, true
}

// backoff is how long the level-th throttling lasts: window, doubled per
// level, at most maxBackoff.
func (k *keyTable) backoff(level int) time.Duration {
	d := k.window
	for i := 0; i < level && d < k.maxBackoff; i++ {
		d *= 2
	}
	return min(d, k.maxBackoff)
}
