package qos

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"tierdb/internal/mongoerr"
)

// chanAdmit is c.Admit with the Entry's Done as a func, as these tests hold
// it (nil on an error).
func chanAdmit(c *Channel, ctx context.Context, t Tier, internal bool) (func(), error) {
	e, err := c.Admit(ctx, t, internal)
	if err != nil {
		return nil, err
	}
	return e.Done, nil
}

// chanEnter is c.Enter with the Entry's Done as a func.
func chanEnter(c *Channel, t Tier) func() { return c.Enter(t).Done }

func TestNewChannelOptions(t *testing.T) {
	c, err := NewChannel(ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Threshold != 1 || st.Guard != 0 {
		t.Errorf("defaults: threshold %d guard %v, want 1 and 0", st.Threshold, st.Guard)
	}
	for _, opts := range []ChannelOptions{{Threshold: -1}, {StarvationGuard: -time.Second}} {
		_, err := NewChannel(opts)
		if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.BadValue {
			t.Errorf("NewChannel(%+v) = %v, want BadValue", opts, err)
		}
	}
	c, err = NewChannel(ChannelOptions{Threshold: 3, StarvationGuard: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Threshold != 3 || st.Guard != time.Second {
		t.Errorf("threshold %d guard %v, want 3 and 1s", st.Threshold, st.Guard)
	}
}

func TestSetThresholdRejectsBelowOne(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{Threshold: 2})
	for _, n := range []int{0, -5} {
		if e, ok := mongoerr.As(c.SetThreshold(n)); !ok || e.Code != mongoerr.BadValue {
			t.Errorf("SetThreshold(%d) did not fail with BadValue", n)
		}
	}
	if got := c.Stats().Threshold; got != 2 {
		t.Errorf("threshold changed to %d by a rejected call", got)
	}
	c.SetStarvationGuard(-time.Second)
	if got := c.Stats().Guard; got != 0 {
		t.Errorf("negative guard stored as %v, want 0 (off)", got)
	}
}

func TestAdmitRejectsUnknownTier(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{})
	done, err := chanAdmit(c, context.Background(), NumTiers, false)
	if e, ok := mongoerr.As(err); !ok || e.Code != mongoerr.BadValue || done != nil {
		t.Fatalf("Admit(NumTiers) = %v, %v; want nil, BadValue", done != nil, err)
	}
	if st := c.Stats(); st.Tiers[High].Admitted+st.Tiers[Normal].Admitted+st.Tiers[Low].Admitted != 0 {
		t.Errorf("rejected request was counted: %+v", st)
	}
}

func TestAdmitWithEndedContext(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A request that need not wait is admitted: the channel only cares
	// about the context while a request waits.
	doneH, err := chanAdmit(c, ctx, High, false)
	if err != nil {
		t.Fatal(err)
	}
	done, err := chanAdmit(c, ctx, Normal, false)
	if !errors.Is(err, context.Canceled) || done != nil {
		t.Fatalf("blocked Admit with an ended context = %v, %v; want nil, Canceled", done != nil, err)
	}
	st := c.Stats()
	if n := st.Tiers[Normal]; n.Waiting != 0 || n.Cancelled != 1 || n.Admitted != 0 {
		t.Errorf("normal stats %+v, want nothing waiting, one cancelled", n)
	}
	// The abandoned normal must not hold lows back once the high leaves.
	doneH()
	doneL, err := chanAdmit(c, context.Background(), Low, false)
	if err != nil {
		t.Fatal(err)
	}
	doneL()
}

func TestWaitTimeStats(t *testing.T) {
	tr := newTracer(t, ChannelOptions{})
	tr.run([]traceStep{
		{"+H1 +N1", "run=H1 wait=N1"},
		{"adv=5ms +N2 adv=5ms", "run=H1 wait=N1,N2"},
		{"-H1", "run=N1,N2 woke=N1,N2"},
		{"+N3 -N1 -N2 -N3", ""},
	})
	st := tr.c.Stats().Tiers[Normal]
	if st.Admitted != 3 || st.Waited != 2 {
		t.Errorf("Admitted %d Waited %d, want 3 and 2", st.Admitted, st.Waited)
	}
	if st.WaitP50 != 5*time.Millisecond || st.WaitP99 != 10*time.Millisecond || st.WaitMax != 10*time.Millisecond {
		t.Errorf("wait p50 %v p99 %v max %v, want 5ms 10ms 10ms", st.WaitP50, st.WaitP99, st.WaitMax)
	}
	if h := tr.c.Stats().Tiers[High]; h.Admitted != 1 || h.Waited != 0 || h.WaitMax != 0 {
		t.Errorf("high stats %+v: highs never wait", h)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	p50, p99, mx := percentiles(ds)
	if p50 != 50 || p99 != 99 || mx != 100 {
		t.Errorf("percentiles of 1..100 = %v %v %v, want 50 99 100", p50, p99, mx)
	}
	if p50, p99, mx := percentiles([]time.Duration{7}); p50 != 7 || p99 != 7 || mx != 7 {
		t.Errorf("percentiles of one value = %v %v %v", p50, p99, mx)
	}
	if p50, p99, mx := percentiles(nil); p50 != 0 || p99 != 0 || mx != 0 {
		t.Errorf("percentiles of nothing = %v %v %v", p50, p99, mx)
	}
}

func TestWaitWindowKeepsRecent(t *testing.T) {
	var w waitWindow
	for i := range waitWindowSize + 10 {
		w.add(time.Duration(i))
	}
	if len(w.buf) != waitWindowSize {
		t.Fatalf("window holds %d, want %d", len(w.buf), waitWindowSize)
	}
	if slices.Contains(w.buf, 9) || !slices.Contains(w.buf, 10) || !slices.Contains(w.buf, waitWindowSize+9) {
		t.Errorf("window did not drop exactly the oldest entries")
	}
}

func TestTokenTable(t *testing.T) {
	var tt tokenTable
	s1, g1 := tt.take()
	if !tt.settle(s1, g1) {
		t.Fatal("first settle refused")
	}
	s2, g2 := tt.take() // reuses the slot
	if s2 != s1 {
		t.Fatalf("slot not reused: %d then %d", s1, s2)
	}
	if tt.settle(s1, g1) {
		t.Fatal("stale token settled the slot's new holder")
	}
	if tt.outstanding() != 1 || !tt.settle(s2, g2) || tt.outstanding() != 0 {
		t.Fatal("new holder lost its token")
	}
	if tt.settle(99, 1) {
		t.Fatal("unknown slot settled")
	}
}

func TestOnHighActive(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{})
	var calls []bool
	c.OnHighActive(func(active bool) { calls = append(calls, active) })
	ctx := context.Background()

	d1, _ := chanAdmit(c, ctx, High, false)
	d2, _ := chanAdmit(c, ctx, High, false)
	dn, _ := chanAdmit(c, ctx, Normal, true)
	dn()
	d1()
	d1()
	if !slices.Equal(calls, []bool{true}) {
		t.Fatalf("calls %v while a high is still in process, want [true]", calls)
	}
	d2()
	if !slices.Equal(calls, []bool{true, false}) {
		t.Fatalf("calls %v, want [true false]", calls)
	}
	dl, _ := chanAdmit(c, ctx, Low, false)
	dl()
	if len(calls) != 2 {
		t.Fatalf("a low request reported high activity: %v", calls)
	}

	// A late observer learns the current state at once.
	d3, _ := chanAdmit(c, ctx, High, false)
	var late []bool
	c.OnHighActive(func(active bool) { late = append(late, active) })
	d3()
	if !slices.Equal(late, []bool{true, false}) {
		t.Fatalf("late observer calls %v, want [true false]", late)
	}
	c.OnHighActive(nil)
	d4, _ := chanAdmit(c, ctx, High, false)
	d4()
	if len(late) != 2 {
		t.Fatalf("removed observer still called: %v", late)
	}
}

func TestOnHighActiveConcurrent(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{})
	var mu sync.Mutex
	var calls []bool
	c.OnHighActive(func(active bool) {
		mu.Lock()
		calls = append(calls, active)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				done, err := chanAdmit(c, context.Background(), High, false)
				if err != nil {
					t.Error(err)
					return
				}
				done()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(calls) == 0 || calls[len(calls)-1] {
		t.Fatalf("observer ended with %v, want a final false", calls)
	}
	for i := range calls {
		if calls[i] != (i%2 == 0) {
			t.Fatalf("observer calls do not alternate starting with true: %v", calls)
		}
	}
}

// Enter admits at once even while the tier would wait, and counts as in
// process: a transaction's later statement never waits, and a high one
// still holds the lower tiers back.
func TestEnterNeverWaitsAndCounts(t *testing.T) {
	c, _ := NewChannel(ChannelOptions{})
	doneH := chanEnter(c, High)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := chanAdmit(c, ctx, Normal, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a normal request ran beside an entered high one: %v", err)
	}
	doneN := chanEnter(c, Normal) // a normal transaction's statement: no wait
	if st := c.Stats(); st.Tiers[High].Admitted != 1 || st.Tiers[Normal].Admitted != 1 {
		t.Fatalf("entered requests not counted: %+v", st)
	}
	doneH()
	doneN()
	doneL, err := chanAdmit(c, context.Background(), Low, false)
	if err != nil {
		t.Fatal(err)
	}
	doneL()
}

// TestEntryTellsItsWait: an Entry says how long its request waited in the
// channel, zero when it ran at once, so the caller reads no clock for it.
func TestEntryTellsItsWait(t *testing.T) {
	clock := newFakeClock()
	c, _ := NewChannel(ChannelOptions{Threshold: 1, Clock: clock})
	ctx := context.Background()
	high, _ := c.Admit(ctx, High, false)
	got := make(chan Entry, 1)
	go func() {
		e, err := c.Admit(ctx, Normal, false)
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	for c.Stats().Tiers[Normal].Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	clock.Advance(7 * time.Millisecond)
	if high.Waited() != 0 {
		t.Errorf("high request waited %v, want 0", high.Waited())
	}
	high.Done()
	e := <-got
	if e.Waited() != 7*time.Millisecond {
		t.Errorf("normal request waited %v, want 7ms", e.Waited())
	}
	e.Done()
	if e, _ := c.Admit(ctx, Normal, false); e.Waited() != 0 {
		t.Errorf("uncontended request waited %v, want 0", e.Waited())
	}
}
