package qos

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAdmitDone measures the channel's uncontended fast path: nothing
// waits, so Admit and Done each take the lock once and nothing else.
func BenchmarkAdmitDone(b *testing.B) {
	ctx := context.Background()
	for _, tier := range []Tier{High, Normal, Low} {
		b.Run(tier.String(), func(b *testing.B) {
			c, _ := NewChannel(ChannelOptions{})
			b.ReportAllocs()
			for b.Loop() {
				e, err := c.Admit(ctx, tier, false)
				if err != nil {
					b.Fatal(err)
				}
				e.Done()
			}
		})
	}
	b.Run("high-with-observer", func(b *testing.B) {
		c, _ := NewChannel(ChannelOptions{})
		c.OnHighActive(func(bool) {})
		b.ReportAllocs()
		for b.Loop() {
			e, _ := c.Admit(ctx, High, false)
			e.Done()
		}
	})
	b.Run("internal", func(b *testing.B) {
		c, _ := NewChannel(ChannelOptions{})
		b.ReportAllocs()
		for b.Loop() {
			e, _ := c.Admit(ctx, Low, true)
			e.Done()
		}
	})
}

// BenchmarkAdmitDoneParallel runs all tiers from every P at once. With a
// threshold nobody reaches it measures lock contention alone; with threshold
// 1 lower tiers really wait behind the highs.
func BenchmarkAdmitDoneParallel(b *testing.B) {
	for _, bc := range []struct {
		name string
		thr  int
	}{{"no-waiting", 1 << 30}, {"threshold-1", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := NewChannel(ChannelOptions{Threshold: bc.thr})
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					e, err := c.Admit(ctx, Tier(i%int(NumTiers)), false)
					if err != nil {
						b.Error(err)
						return
					}
					e.Done()
					i++
				}
			})
		})
	}
}

// BenchmarkGateAdmitDone measures the gate's uncontended fast path: a free
// slot and nobody waiting (one map lookup, the lock twice), with tierdb's
// default restricted share and hold. The request's arrival and end are the
// caller's readings, which the commands layer takes for its latency
// histograms with QoS on or off, so they are taken outside the loop (one
// millisecond apart, so that the latency counts as a completed request's).
func BenchmarkGateAdmitDone(b *testing.B) {
	ctx := context.Background()
	g, _ := NewGate(GateOptions{Parallelism: 8, Restricted: 1, HighHold: 100 * time.Millisecond})
	arrived := time.Now()
	end := arrived.Add(time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		a, err := g.Admit(ctx, Normal, Principal{User: "admin.alice", Weight: 1}, arrived)
		if err != nil {
			b.Fatal(err)
		}
		a.DoneAt(end)
	}
}

// BenchmarkGateAdmitDoneQueued measures the gate's waiting path: 16
// goroutines per P share P = 4 slots, so most requests wait at the gate (a
// waiter, a park and a wake each), as 16 clients of one user do with P
// found by tierdb on qos-overhead.
func BenchmarkGateAdmitDoneQueued(b *testing.B) {
	ctx := context.Background()
	g, _ := NewGate(GateOptions{Parallelism: 4})
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a, err := g.Admit(ctx, Normal, Principal{User: "peer 127.0.0.1", Weight: 1}, time.Now())
			if err != nil {
				b.Error(err)
				return
			}
			a.Done()
		}
	})
}

// BenchmarkAdmissionPath is what an uncontended request pays in all, as the
// commands layer admits it: the priority channel, then the gate (tierdb's
// defaults: threshold 1, P 8, restricted share 1 with its hold). The
// arrival and end are the readings the commands layer takes anyway (see
// BenchmarkGateAdmitDone); "withReadings" takes both per request too, as
// if they were admission's own.
func BenchmarkAdmissionPath(b *testing.B) {
	for _, read := range []bool{false, true} {
		name := "admission"
		if read {
			name = "withReadings"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c, _ := NewChannel(ChannelOptions{Threshold: 1})
			g, _ := NewGate(GateOptions{Parallelism: 8, Restricted: 1, HighHold: 100 * time.Millisecond})
			arrived := time.Now()
			end := arrived.Add(time.Millisecond)
			b.ReportAllocs()
			for b.Loop() {
				if read {
					arrived = time.Now()
				}
				e, err := c.Admit(ctx, Normal, false)
				if err != nil {
					b.Fatal(err)
				}
				a, err := g.Admit(ctx, Normal, Principal{User: "admin.alice", Weight: 1}, arrived)
				if err != nil {
					b.Fatal(err)
				}
				if read {
					end = time.Now()
				}
				a.DoneAt(end)
				e.Done()
			}
		})
	}
}
