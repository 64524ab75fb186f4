package tierctl

import (
	"context"
	"sync"
	"testing"
	"time"

	"tierdb/internal/qos"
)

// A high-tier flip (one per high-tier request) wakes the controller's
// goroutine only when there is something to change: at every flip with CPU
// pools; without them only at the first request after a calm spell, when
// the lower tiers' nice levels come into force. Otherwise each high-tier
// request would wake a goroutine that competes with it for the CPU, to do
// nothing.
func TestHighActiveFlipsWakeTheControllerOnlyForAChange(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pools, niced bool
		nice         [qos.NumTiers]int
		wake         bool
	}{
		{name: "pools", pools: true, niced: true, nice: qos.DefaultConfig().Nice, wake: true},
		{name: "calm, low at 19", nice: qos.DefaultConfig().Nice, wake: true},
		{name: "already niced", niced: true, nice: qos.DefaultConfig().Nice},
		{name: "no lower tier above 0", nice: [qos.NumTiers]int{-19, 0, 0}},
	} {
		cfg := qos.DefaultConfig()
		cfg.Nice = tc.nice
		if tc.pools {
			cfg.Pools = qos.CPUPools{Priority: []int{0}, Standard: []int{0}, Restricted: []int{0}}
		}
		// No goroutine: the test reads what it would be woken by.
		c := &Controller{cfg: cfg, niced: tc.niced, dirty: make(chan struct{}, 1)}
		c.refreshFlip()
		c.SetHighActive(true)
		c.SetHighActive(false)
		if woken := len(c.dirty) == 1; woken != tc.wake {
			t.Errorf("%s: woken %v, want %v", tc.name, woken, tc.wake)
		}
		if active, _, ended := c.highActive(); active || ended.IsZero() {
			t.Errorf("%s: the last flip was to inactive, at a time", tc.name)
		}
	}
}

// The lower tiers' nice levels come into force with the high tier's first
// request and go a hold after its last, on the controller's goroutine; a
// flip never waits for that goroutine's lock.
func TestLowerTiersNicedFollowTheHighTier(t *testing.T) {
	cfg := quietConfig()
	cfg.Fair.HighHold = 30 * time.Millisecond
	c := New(Options{}, cfg)
	defer c.Close()
	niced := func() bool { return c.Status().LowerTiersNiced }
	eventually := func(what string, want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for niced() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: lowerTiersNiced stayed %v", what, !want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if niced() {
		t.Fatal("niced before any high-tier request")
	}
	c.SetHighActive(true)
	eventually("the high tier active", true)
	time.Sleep(3 * cfg.Fair.HighHold)
	if !niced() {
		t.Fatal("lifted while a high-tier request was in process")
	}
	c.SetHighActive(false)
	eventually("a hold after the last request", false)

	// A flip while the controller's lock is held (as during its system
	// calls) returns at once.
	c.mu.Lock()
	done := make(chan struct{})
	go func() {
		c.SetHighActive(true)
		c.SetHighActive(false)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("SetHighActive waited for the controller's lock")
	}
	c.mu.Unlock()
}

// Priority inheritance asks PostgreSQL whom the high tier waits for only
// once the high tier has stayed busy for half an interval: a client whose
// requests are short never pays for the question, one that waits long is
// looked into, at most once an interval.
func TestInheritAsksOnlyAboutLongBusySpells(t *testing.T) {
	cfg := quietConfig()
	c := New(Options{}, cfg)
	defer c.Close()
	// A high-tier backend for Inherit to ask about; no process is touched,
	// as the holders named are none.
	c.mu.Lock()
	c.backends[1<<22] = qos.High
	c.mu.Unlock()
	var mu sync.Mutex
	asked := 0
	holders := func(context.Context, []int) ([]int, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return nil, nil
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return asked
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Inherit(ctx, 20*time.Millisecond, holders); close(done) }()
	defer func() { cancel(); <-done }()
	// Short requests back to back: each spell ends well within 10 ms.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		c.SetHighActive(true)
		time.Sleep(time.Millisecond)
		c.SetHighActive(false)
		time.Sleep(100 * time.Microsecond)
	}
	if n := count(); n != 0 {
		t.Fatalf("asked %d times about short requests", n)
	}
	// One long wait: 200 ms busy, asked about once an interval (~10).
	c.SetHighActive(true)
	time.Sleep(200 * time.Millisecond)
	c.SetHighActive(false)
	if n := count(); n < 3 || n > 12 {
		t.Fatalf("asked %d times in a 200 ms spell with a 20 ms interval, want about 10", n)
	}
}

// quietConfig is the default configuration without the automatic slice: a
// controller in a test must not give the test binary's own threads a
// short slice when other packages' tests keep the CPUs busy.
func quietConfig() qos.Config {
	cfg := qos.DefaultConfig()
	cfg.SliceAuto = false
	return cfg
}
