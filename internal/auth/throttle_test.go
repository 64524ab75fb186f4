package auth

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestThrottle(o ThrottleOptions) (*Throttle, *fakeClock) {
	c := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	o.Now = c.Now
	return NewThrottle(o), c
}

// try runs one whole attempt: refused, or reserved and settled with o.
func try(t *Throttle, user, peer string, o Outcome) (Verdict, []Lockout) {
	a, v := t.Begin(user, peer)
	if v.Throttled {
		return v, nil
	}
	return v, a.Done(o)
}

func TestThrottleOffIsNil(t *testing.T) {
	th := NewThrottle(ThrottleOptions{UserFailures: 0, PeerFailures: 5})
	if th != nil {
		t.Fatal("UserFailures 0 must turn throttling off")
	}
	for i := 0; i < 100; i++ {
		if v, _ := try(th, "admin.u", "10.0.0.1", Failed); v.Throttled {
			t.Fatal("a nil throttle refused")
		}
	}
	if v := th.Check("admin.u", "10.0.0.1"); v.Throttled {
		t.Fatal("a nil throttle refused")
	}
	if th.Stats() != (ThrottleStats{}) {
		t.Fatal("a nil throttle counted")
	}
}

func TestThrottleUserLockoutAndExpiry(t *testing.T) {
	th, clk := newTestThrottle(ThrottleOptions{UserFailures: 3, Window: time.Minute})
	for i := 0; i < 2; i++ {
		if v, l := try(th, "admin.u", "p1", Failed); v.Throttled || len(l) != 0 {
			t.Fatalf("failure %d: throttled=%v lockouts=%v", i+1, v.Throttled, l)
		}
	}
	_, l := try(th, "admin.u", "p2", Failed)
	if len(l) != 1 || l[0].By != ByUser || l[0].Key != "admin.u" || l[0].For != time.Minute || l[0].Failures != 3 {
		t.Fatalf("third failure: lockouts %+v", l)
	}
	// Refused from any address, even with the right password, without a
	// password check; another user is not affected.
	v := th.Check("admin.u", "p3")
	if !v.Throttled || v.By != ByUser || !v.Until.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("check: %+v", v)
	}
	if v, _ := try(th, "admin.u", "p3", Succeeded); !v.Throttled {
		t.Fatal("throttled user got an attempt")
	}
	if v, _ := try(th, "admin.other", "p1", Succeeded); v.Throttled {
		t.Fatal("another user was throttled")
	}
	clk.Advance(59 * time.Second)
	if v := th.Check("admin.u", "p1"); !v.Throttled {
		t.Fatal("throttling ended early")
	}
	clk.Advance(time.Second)
	if v, _ := try(th, "admin.u", "p1", Succeeded); v.Throttled {
		t.Fatal("throttling did not end after the window")
	}
	st := th.Stats()
	if st.LockoutsUser != 1 || st.RefusedUser != 3 || st.RefusedPeer != 0 || st.LockoutsPeer != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestThrottleFailuresOutsideTheWindowDoNotAddUp(t *testing.T) {
	th, clk := newTestThrottle(ThrottleOptions{UserFailures: 3, Window: time.Minute})
	for i := 0; i < 10; i++ {
		if v, l := try(th, "admin.u", "p", Failed); v.Throttled || len(l) != 0 {
			t.Fatalf("round %d: throttled=%v lockouts=%v", i, v.Throttled, l)
		}
		try(th, "admin.u", "p", Failed)
		clk.Advance(61 * time.Second)
	}
}

func TestThrottleBackoffDoublesUpToTheCap(t *testing.T) {
	th, clk := newTestThrottle(ThrottleOptions{UserFailures: 2, Window: time.Second, MaxBackoff: 5 * time.Second})
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		try(th, "admin.u", "", Failed)
		_, l := try(th, "admin.u", "", Failed)
		if len(l) != 1 || l[0].For != w {
			t.Fatalf("lockout %d: %+v, want %v", i+1, l, w)
		}
		clk.Advance(w - time.Millisecond)
		if v := th.Check("admin.u", ""); !v.Throttled {
			t.Fatalf("lockout %d ended early", i+1)
		}
		clk.Advance(time.Millisecond)
	}
	// Quiet for MaxBackoff: forgotten with its history; the next
	// throttling is the first again.
	clk.Advance(5 * time.Second)
	if st := th.Stats(); st.TrackedUsers != 1 {
		t.Fatalf("tracked %d before the sweep", st.TrackedUsers)
	}
	try(th, "admin.u", "", Failed)
	if _, l := try(th, "admin.u", "", Failed); len(l) != 1 || l[0].For != time.Second {
		t.Fatalf("after a quiet spell: %+v", l)
	}
}

func TestThrottleSuccessResetsTheUserNotThePeer(t *testing.T) {
	th, _ := newTestThrottle(ThrottleOptions{UserFailures: 3, PeerFailures: 4, Window: time.Minute})
	try(th, "admin.u", "p", Failed)
	try(th, "admin.u", "p", Failed)
	try(th, "admin.u", "p", Succeeded) // the user's count starts again
	try(th, "admin.u", "p", Failed)
	if v := th.Check("admin.u", "p"); v.Throttled {
		t.Fatal("the success did not reset the user's failures")
	}
	// The address has failed three times; its fourth throttles it, for
	// every user, while a user from another address is unaffected.
	_, l := try(th, "admin.u", "p", Failed)
	if len(l) != 1 || l[0].By != ByPeer || l[0].Key != "p" {
		t.Fatalf("lockouts %+v", l)
	}
	if v := th.Check("admin.someone", "p"); !v.Throttled || v.By != ByPeer {
		t.Fatalf("another user from the throttled address: %+v", v)
	}
	if v := th.Check("admin.u", "q"); v.Throttled {
		t.Fatalf("the user from another address: %+v", v)
	}
	if st := th.Stats(); st.RefusedPeer != 1 || st.LockoutsPeer != 1 || st.LockoutsUser != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestThrottlePeerSprayingManyUsers(t *testing.T) {
	th, _ := newTestThrottle(ThrottleOptions{UserFailures: 5, PeerFailures: 10, Window: time.Minute})
	refused := 0
	for i := 0; i < 100; i++ {
		if v, _ := try(th, fmt.Sprintf("admin.u%d", i), "attacker", Failed); v.Throttled {
			refused++
		}
	}
	if refused != 90 {
		t.Fatalf("refused %d of 100 guesses from one address, want 90", refused)
	}
}

func TestThrottlePeerOff(t *testing.T) {
	th, _ := newTestThrottle(ThrottleOptions{UserFailures: 2, PeerFailures: 0})
	for i := 0; i < 50; i++ {
		if v, _ := try(th, fmt.Sprintf("admin.u%d", i), "attacker", Failed); v.Throttled {
			t.Fatal("an address was throttled with PeerFailures 0")
		}
	}
	if st := th.Stats(); st.TrackedPeers != 0 {
		t.Fatalf("tracked %d addresses", st.TrackedPeers)
	}
}

// Attempts reserved concurrently cannot get more guesses past the check
// than the failures allowed.
func TestThrottleReservationsBoundConcurrentGuesses(t *testing.T) {
	th, _ := newTestThrottle(ThrottleOptions{UserFailures: 5, Window: time.Minute})
	var held []*Attempt
	for i := 0; i < 20; i++ {
		if a, v := th.Begin("admin.u", "p"); !v.Throttled {
			held = append(held, a)
		}
	}
	if len(held) != 5 {
		t.Fatalf("%d attempts in flight, want 5", len(held))
	}
	// A malformed message releases its reservation without counting.
	held[0].Done(Released)
	held[0].Done(Failed) // settling twice does nothing
	if a, v := th.Begin("admin.u", "p"); v.Throttled {
		t.Fatal("a released reservation was not given back")
	} else {
		held[0] = a
	}
	var lockouts []Lockout
	for _, a := range held {
		lockouts = append(lockouts, a.Done(Failed)...)
	}
	if len(lockouts) != 1 {
		t.Fatalf("lockouts %+v", lockouts)
	}
	if v := th.Check("admin.u", "p"); !v.Throttled {
		t.Fatal("not throttled after 5 failures")
	}
}

func TestThrottleSuccessWhileOthersInFlight(t *testing.T) {
	th, _ := newTestThrottle(ThrottleOptions{UserFailures: 2, Window: time.Minute})
	a, _ := th.Begin("admin.u", "p")
	b, _ := th.Begin("admin.u", "p")
	a.Done(Succeeded)
	b.Done(Failed)
	if v := th.Check("admin.u", "p"); v.Throttled {
		t.Fatal("throttled after one failure")
	}
}

func TestThrottleMemoryIsBounded(t *testing.T) {
	th, clk := newTestThrottle(ThrottleOptions{UserFailures: 3, PeerFailures: 3, Window: time.Minute, MaxEntries: 100})
	// A target locked out first, then a flood of new names and addresses.
	for i := 0; i < 3; i++ {
		try(th, "admin.target", "", Failed)
	}
	long := strings.Repeat("x", 4096)
	for i := 0; i < 5000; i++ {
		try(th, fmt.Sprintf("admin.%d-%s", i, long), fmt.Sprintf("10.0.%d.%d", i/256, i%256), Failed)
		if i%100 == 0 {
			clk.Advance(time.Millisecond)
		}
	}
	st := th.Stats()
	if st.TrackedUsers > 100 || st.TrackedPeers > 100 || st.Evicted == 0 {
		t.Fatalf("stats %+v", st)
	}
	for k := range th.users.m {
		if len(k) > 80 {
			t.Fatalf("a key of %d bytes is kept", len(k))
		}
	}
	// Everything expires once quiet for MaxBackoff (16 minutes).
	clk.Advance(17 * time.Minute)
	try(th, "admin.last", "10.9.9.9", Released)
	for i := 0; i < 200; i++ { // each new key sweeps a few expired ones
		try(th, fmt.Sprintf("admin.later%d", i), "", Released)
	}
	if st := th.Stats(); st.TrackedUsers > 100 {
		t.Fatalf("stats after expiry %+v", st)
	}
}

func TestThrottleEvictionPrefersUnthrottledKeys(t *testing.T) {
	th, clk := newTestThrottle(ThrottleOptions{UserFailures: 2, Window: time.Minute, MaxEntries: 4})
	try(th, "admin.target", "", Failed)
	try(th, "admin.target", "", Failed) // throttled, and least recently seen
	for i := 0; i < 3; i++ {
		clk.Advance(time.Millisecond)
		try(th, fmt.Sprintf("admin.u%d", i), "", Failed)
	}
	clk.Advance(time.Millisecond)
	try(th, "admin.new", "", Failed) // the table is full: someone goes
	if v := th.Check("admin.target", ""); !v.Throttled {
		t.Fatal("eviction dropped the throttled user rather than an unthrottled one")
	}
}

func TestThrottleConcurrentUse(t *testing.T) {
	th := NewThrottle(ThrottleOptions{UserFailures: 3, PeerFailures: 10, Window: 10 * time.Millisecond, MaxEntries: 50})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				user := fmt.Sprintf("admin.u%d", i%70)
				peer := fmt.Sprintf("10.0.0.%d", (g*7+i)%60)
				o := Failed
				if i%11 == 0 {
					o = Succeeded
				}
				try(th, user, peer, o)
				th.Check(user, peer)
				_ = th.Stats()
			}
		}(g)
	}
	wg.Wait()
	if st := th.Stats(); st.TrackedUsers > 50 || st.TrackedPeers > 50 {
		t.Fatalf("stats %+v", st)
	}
}
