package qos

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// queuedSignal makes c report, on the returned channel, the tier of every
// request that starts waiting.
func queuedSignal(c *Channel) <-chan Tier {
	ch := make(chan Tier, 16)
	c.hooks = &hooks{event: func(ev event) {
		if ev.kind == evQueue {
			ch <- ev.tier
		}
	}}
	return ch
}

// assertIdle checks that a channel with nothing in flight has every counter
// back at zero.
func assertIdle(t *testing.T, c *Channel) {
	t.Helper()
	st := c.Stats()
	for tier := range NumTiers {
		if s := st.Tiers[tier]; s.InProcess != 0 || s.Waiting != 0 {
			t.Fatalf("%v: %d in process, %d waiting; want none", tier, s.InProcess, s.Waiting)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.tokens.outstanding(); n != 0 {
		t.Fatalf("%d done tokens outstanding", n)
	}
	for tier := range NumTiers {
		if q := &c.queues[tier]; q.head != nil || q.tail != nil || q.n != 0 || q.unsignalled != 0 {
			t.Fatalf("%v queue not empty: %+v", tier, *q)
		}
	}
}

// A wake-up and a cancellation arriving together must leave the request
// either admitted (with a done func that is then called) or fully withdrawn;
// in both cases the low request behind it must eventually run.
func TestCancelRacingWithGrant(t *testing.T) {
	var admitted, cancelled int
	for range 300 {
		c, _ := NewChannel(ChannelOptions{})
		queued := queuedSignal(c)
		ctx := context.Background()
		doneH, _ := chanAdmit(c, ctx, High, false)

		nctx, cancel := context.WithCancel(ctx)
		type result struct {
			done func()
			err  error
		}
		nres := make(chan result, 1)
		go func() {
			d, err := chanAdmit(c, nctx, Normal, false)
			nres <- result{d, err}
		}()
		<-queued
		lres := make(chan result, 1)
		go func() {
			d, err := chanAdmit(c, ctx, Low, false)
			lres <- result{d, err}
		}()
		<-queued

		var wg sync.WaitGroup
		wg.Go(doneH)
		wg.Go(cancel)
		wg.Wait()

		n := <-nres
		switch {
		case n.err == nil && n.done != nil:
			admitted++
			n.done()
		case errors.Is(n.err, context.Canceled) && n.done == nil:
			cancelled++
		default:
			t.Fatalf("normal request: done %v, err %v", n.done != nil, n.err)
		}
		l := <-lres
		if l.err != nil {
			t.Fatal(l.err)
		}
		l.done()
		assertIdle(t, c)
		st := c.Stats()
		if got := st.Tiers[Normal].Admitted + st.Tiers[Normal].Cancelled; got != 1 {
			t.Fatalf("normal request counted %d times as admitted or cancelled", got)
		}
	}
	t.Logf("admitted %d, cancelled %d", admitted, cancelled)
}

// The same race against a starvation-guard pass: the pass must not be lost
// with the cancelled request, nor be used twice.
func TestCancelRacingWithGuardPass(t *testing.T) {
	for range 300 {
		clk := newFakeClock()
		c, _ := NewChannel(ChannelOptions{Clock: clk, StarvationGuard: time.Millisecond})
		queued := queuedSignal(c)
		ctx := context.Background()
		doneH, _ := chanAdmit(c, ctx, High, false)

		type result struct {
			done func()
			err  error
		}
		n1ctx, cancel := context.WithCancel(ctx)
		n1 := make(chan result, 1)
		go func() {
			d, err := chanAdmit(c, n1ctx, Normal, false)
			n1 <- result{d, err}
		}()
		<-queued
		n2 := make(chan result, 1)
		go func() {
			d, err := chanAdmit(c, ctx, Normal, false)
			n2 <- result{d, err}
		}()
		<-queued

		var wg sync.WaitGroup
		wg.Go(func() { clk.Advance(time.Millisecond) })
		wg.Go(cancel)
		wg.Wait()

		// Exactly one pass was issued. If N1 took it, N2 still waits;
		// if N1 was cancelled, the pass went to N2.
		r1 := <-n1
		if r1.err == nil {
			r1.done()
		}
		if r1.err != nil {
			r2 := <-n2
			if r2.err != nil {
				t.Fatal(r2.err)
			}
			r2.done()
		}
		st := c.Stats().Tiers[Normal]
		if r1.err == nil {
			if st.Waiting != 1 || st.GuardAdmissions != 1 {
				t.Fatalf("N1 admitted: %d waiting, %d guard admissions; want 1 and 1", st.Waiting, st.GuardAdmissions)
			}
			doneH()
			r2 := <-n2
			r2.done()
		} else {
			if st.GuardAdmissions != 1 {
				t.Fatalf("N1 cancelled: %d guard admissions, want 1 (passed on to N2)", st.GuardAdmissions)
			}
			doneH()
		}
		assertIdle(t, c)
	}
}
