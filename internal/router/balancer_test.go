package router

import (
	"maps"
	"math"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(f float64) time.Duration { return time.Duration(math.Round(f * float64(time.Millisecond))) }

// period is one scripted period of a trace: the reads observed on each side
// (nil: none), the round trips measured, and the fraction and reason
// expected from the Tick that ends it.
type period struct {
	primary, standby       []time.Duration
	primaryRTT, standbyRTT []time.Duration
	want                   float64
	reason                 string
}

// ratio is a period whose server-side latency ratio primary/standby is r
// (standby 1ms, no RTT).
func ratio(r float64, want float64, reason string) period {
	return period{primary: []time.Duration{ms(r)}, standby: []time.Duration{ms(1)}, want: want, reason: reason}
}

func (p period) observe(b *Balancer) {
	for _, d := range p.primary {
		b.Observe(false, d)
	}
	for _, d := range p.standby {
		b.Observe(true, d)
	}
	for _, d := range p.primaryRTT {
		b.ObserveRTT(false, d)
	}
	for _, d := range p.standbyRTT {
		b.ObserveRTT(true, d)
	}
}

// runTrace plays periods on b, which started at t0 with the default
// 10s period, and checks the fraction and decision after each.
func runTrace(t *testing.T, b *Balancer, trace []period) {
	t.Helper()
	now := t0
	counts := map[string]int64{}
	for i, p := range trace {
		p.observe(b)
		now = now.Add(b.Config().Period)
		if !b.Tick(now) {
			t.Fatalf("period %d: Tick at the period's end did nothing", i)
		}
		if got := b.Fraction(); got != p.want {
			t.Errorf("period %d: fraction %v, want %v", i, got, p.want)
		}
		st := b.Status()
		if len(st.Decisions) == 0 {
			t.Fatalf("period %d: no decision recorded", i)
		}
		d := st.Decisions[len(st.Decisions)-1]
		if d.Reason != p.reason || d.Fraction != p.want || !d.At.Equal(now) {
			t.Errorf("period %d: decision %+v, want reason %q fraction %v at %v", i, d, p.reason, p.want, now)
		}
		counts[p.reason]++
		if !maps.Equal(st.Counts, counts) {
			t.Errorf("period %d: counts %v, want %v", i, st.Counts, counts)
		}
	}
}

func repeat(n int, p period) []period {
	out := make([]period, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func concat(ps ...[]period) []period {
	var out []period
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

func TestBalancerStartsAtLow(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	if got := b.Fraction(); got != 0.1 {
		t.Fatalf("initial fraction %v, want 0.1", got)
	}
	st := b.Status()
	if st.Fraction != 0.1 || st.LastRatio != 0 || len(st.Decisions) != 0 {
		t.Fatalf("initial status %+v", st)
	}
	want := BalancerConfig{Period: 10 * time.Second, Step: 0.1, Low: 0.1, High: 0.9, RaiseAbove: 1.3, LowerBelow: 0.75}
	if got := b.Config(); got != want {
		t.Fatalf("default config %+v, want %+v", got, want)
	}
}

func TestBalancerTraces(t *testing.T) {
	tests := []struct {
		name  string
		trace []period
	}{
		{
			name: "congested primary raises by a step per period up to the cap",
			trace: []period{
				ratio(2, 0.2, "raise"), ratio(2, 0.3, "raise"), ratio(2, 0.4, "raise"), ratio(2, 0.5, "raise"),
				ratio(2, 0.6, "raise"), ratio(2, 0.7, "raise"), ratio(2, 0.8, "raise"), ratio(2, 0.9, "raise"),
				ratio(2, 0.9, "raise"), ratio(50, 0.9, "raise"),
			},
		},
		{
			name: "congested standbys lower to the floor",
			trace: []period{
				ratio(2, 0.2, "raise"), ratio(2, 0.3, "raise"), ratio(2, 0.4, "raise"),
				ratio(0.5, 0.3, "lower"), ratio(0.5, 0.2, "lower"), ratio(0.5, 0.1, "lower"),
				ratio(0.5, 0.1, "lower"), ratio(0.01, 0.1, "lower"),
			},
		},
		{
			name: "normal ratio at the start explores but stays at the floor",
			trace: []period{
				ratio(1, 0.1, "explore"), ratio(1, 0.1, "explore"),
			},
		},
		{
			name: "normal ratio holds until four equal periods, then explores downward",
			trace: concat(
				[]period{ratio(2, 0.2, "raise"), ratio(2, 0.3, "raise"), ratio(2, 0.4, "raise"), ratio(2, 0.5, "raise")},
				// RecentBal = [0.2 0.3 0.4 0.5]: three holds make it all 0.5.
				repeat(3, ratio(1, 0.5, "hold")),
				[]period{ratio(1, 0.4, "explore")},
				repeat(3, ratio(1.2, 0.4, "hold")),
				[]period{ratio(0.8, 0.3, "explore")},
				repeat(3, ratio(1, 0.3, "hold")),
				[]period{ratio(1, 0.2, "explore")},
				repeat(3, ratio(1, 0.2, "hold")),
				[]period{ratio(1, 0.1, "explore")},
				repeat(3, ratio(1, 0.1, "hold")),
				[]period{ratio(1, 0.1, "explore")},
			),
		},
		{
			name: "a raise in between restarts the count of equal periods",
			trace: []period{
				ratio(2, 0.2, "raise"), ratio(1, 0.2, "hold"), ratio(1, 0.2, "hold"),
				ratio(2, 0.3, "raise"), ratio(1, 0.3, "hold"), ratio(1, 0.3, "hold"), ratio(1, 0.3, "hold"),
				ratio(1, 0.2, "explore"),
			},
		},
		{
			name: "thresholds are exclusive: 1.3 and 0.75 are normal",
			trace: []period{
				ratio(2, 0.2, "raise"),
				ratio(1.3, 0.2, "hold"), ratio(0.75, 0.2, "hold"),
				ratio(1.31, 0.3, "raise"), ratio(0.74, 0.2, "lower"),
			},
		},
		{
			name: "periods without reads on both sides keep the fraction",
			trace: []period{
				ratio(2, 0.2, "raise"), ratio(2, 0.3, "raise"),
				{want: 0.3, reason: "no data"},
				{primary: []time.Duration{ms(50)}, want: 0.3, reason: "no data"},
				{standby: []time.Duration{ms(50)}, want: 0.3, reason: "no data"},
				{primaryRTT: []time.Duration{ms(1)}, standbyRTT: []time.Duration{ms(1)}, want: 0.3, reason: "no data"},
				ratio(2, 0.4, "raise"),
			},
		},
		{
			name: "medians, not means, decide",
			trace: []period{
				// Primary median 2ms (one 500ms outlier), standby median 1ms.
				{primary: []time.Duration{ms(2), ms(500), ms(1), ms(2), ms(3)}, standby: []time.Duration{ms(1), ms(1), ms(90)}, want: 0.2, reason: "raise"},
				// Primary median 1ms, standby median 1ms despite a slow mean.
				{primary: []time.Duration{ms(1), ms(1), ms(1)}, standby: []time.Duration{ms(1), ms(1), ms(900), ms(900), ms(0.9)}, want: 0.2, reason: "hold"},
			},
		},
		{
			name: "the period's fastest round trip is subtracted: a congested node's probes queue like its reads",
			trace: []period{
				// Medians would give (5-4)/(1-0.1) = 1.1: hold. The fastest
				// probes give (5-0.1)/(1-0.1) = 5.4: raise.
				{primary: []time.Duration{ms(5)}, primaryRTT: []time.Duration{ms(0.1), ms(4), ms(4)}, standby: []time.Duration{ms(1)}, standbyRTT: []time.Duration{ms(0.1)}, want: 0.2, reason: "raise"},
			},
		},
		{
			name: "RTT is subtracted before comparing",
			trace: []period{
				// 12ms observed with a 10ms round trip on the primary is 2ms on
				// the server, as on the standbys: no raise.
				{primary: []time.Duration{ms(12)}, primaryRTT: []time.Duration{ms(10)}, standby: []time.Duration{ms(2)}, want: 0.1, reason: "explore"},
				// Same the other way round: no lower.
				{primary: []time.Duration{ms(2)}, standby: []time.Duration{ms(12)}, standbyRTT: []time.Duration{ms(10), ms(10), ms(30)}, want: 0.1, reason: "explore"},
				// A fast primary hidden behind a long round trip, a congested
				// standby close by: ratio 1/4, lower (at the floor).
				{primary: []time.Duration{ms(11)}, primaryRTT: []time.Duration{ms(10)}, standby: []time.Duration{ms(4)}, want: 0.1, reason: "lower"},
				// Same observed latency on both sides, but the standby's is
				// mostly its 3ms round trip: 4ms against 2ms on the server,
				// raise.
				{primary: []time.Duration{ms(5)}, primaryRTT: []time.Duration{ms(1)}, standby: []time.Duration{ms(5)}, standbyRTT: []time.Duration{ms(3)}, want: 0.2, reason: "raise"},
			},
		},
		{
			name: "server-side latency is at least 1µs",
			trace: []period{
				// Both sides' RTT exceeds their latency: 1µs each, ratio 1.
				{primary: []time.Duration{ms(1)}, primaryRTT: []time.Duration{ms(5)}, standby: []time.Duration{ms(1)}, standbyRTT: []time.Duration{ms(9)}, want: 0.1, reason: "explore"},
				// Primary clamps to 1µs, standby 1ms: ratio 0.001, lower.
				{primary: []time.Duration{ms(1)}, primaryRTT: []time.Duration{ms(5)}, standby: []time.Duration{ms(1)}, want: 0.1, reason: "lower"},
				// Standby clamps to 1µs: ratio 1000, raise.
				{primary: []time.Duration{ms(1)}, standby: []time.Duration{ms(1)}, standbyRTT: []time.Duration{ms(1)}, want: 0.2, reason: "raise"},
			},
		},
		{
			name: "samples do not carry over into the next period",
			trace: []period{
				ratio(2, 0.2, "raise"),
				// Only standby reads now: the primary's 2ms from the previous
				// period must be gone.
				{standby: []time.Duration{ms(1)}, want: 0.2, reason: "no data"},
				{primary: []time.Duration{ms(12)}, primaryRTT: []time.Duration{ms(10)}, standby: []time.Duration{ms(2)}, want: 0.2, reason: "hold"},
				// RTTs are cleared too: with last period's 10ms round trip
				// this would be 2ms against 2ms, a hold.
				{primary: []time.Duration{ms(12)}, standby: []time.Duration{ms(2)}, want: 0.3, reason: "raise"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTrace(t, NewBalancer(BalancerConfig{}, t0), tt.trace)
		})
	}
}

func TestBalancerDecisionRatio(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	b.Observe(false, ms(12))
	b.ObserveRTT(false, ms(2))
	b.Observe(true, ms(5))
	b.ObserveRTT(true, ms(1))
	b.Tick(t0.Add(10 * time.Second))
	st := b.Status()
	if len(st.Decisions) != 1 {
		t.Fatalf("%d decisions, want 1", len(st.Decisions))
	}
	// (12-2)/(5-1) = 2.5
	if d := st.Decisions[0]; d.Ratio != 2.5 || d.Reason != "raise" || d.Fraction != 0.2 {
		t.Fatalf("decision %+v, want ratio 2.5, raise to 0.2", d)
	}
	if st.LastRatio != 2.5 || st.Fraction != 0.2 {
		t.Fatalf("status %+v, want last ratio 2.5, fraction 0.2", st)
	}

	b.Observe(true, ms(5))
	b.Tick(t0.Add(20 * time.Second))
	st = b.Status()
	if d := st.Decisions[1]; d.Ratio != 0 || d.Reason != "no data" || d.Fraction != 0.2 {
		t.Fatalf("no-data decision %+v, want ratio 0 and fraction kept", d)
	}
	if st.LastRatio != 0 {
		t.Fatalf("last ratio after a no-data period %v, want 0", st.LastRatio)
	}
}

func TestBalancerTickBeforePeriodEnd(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	b.Observe(false, ms(3))
	b.Observe(true, ms(1))
	for _, at := range []time.Duration{0, time.Second, 9*time.Second + 999*time.Millisecond} {
		if b.Tick(t0.Add(at)) {
			t.Fatalf("Tick at +%v ended a 10s period", at)
		}
	}
	if st := b.Status(); st.Fraction != 0.1 || len(st.Decisions) != 0 {
		t.Fatalf("early ticks changed the state: %+v", st)
	}
	// Reads from the whole period count, including those before the early
	// ticks.
	if !b.Tick(t0.Add(10 * time.Second)) {
		t.Fatal("Tick exactly at the period's end did nothing")
	}
	if got := b.Fraction(); got != 0.2 {
		t.Fatalf("fraction %v, want 0.2 from the reads before the early ticks", got)
	}
	// The next period starts at the Tick that ended the previous one.
	next := t0.Add(10 * time.Second)
	if b.Tick(next.Add(9 * time.Second)) {
		t.Fatal("second period ended after 9s")
	}
	if !b.Tick(next.Add(25 * time.Second)) {
		t.Fatal("second period did not end after 25s")
	}
	// A late tick restarts the period at its own time, not at the nominal end.
	late := next.Add(25 * time.Second)
	if b.Tick(late.Add(9 * time.Second)) {
		t.Fatal("third period ended 9s after the late tick")
	}
	if !b.Tick(late.Add(10 * time.Second)) {
		t.Fatal("third period did not end 10s after the late tick")
	}
	if n := len(b.Status().Decisions); n != 3 {
		t.Fatalf("%d decisions, want 3 (one per ended period)", n)
	}
}

func TestBalancerCustomConfig(t *testing.T) {
	cfg := BalancerConfig{Period: time.Second, Step: 0.25, Low: 0.05, High: 0.6, RaiseAbove: 2, LowerBelow: 0.5}
	b := NewBalancer(cfg, t0)
	if got := b.Config(); got != cfg {
		t.Fatalf("config %+v, want %+v", got, cfg)
	}
	if got := b.Fraction(); got != 0.05 {
		t.Fatalf("initial fraction %v, want Low 0.05", got)
	}
	runTrace(t, b, []period{
		ratio(1.9, 0.05, "explore"), // below RaiseAbove 2
		ratio(2.1, 0.3, "raise"),
		ratio(2.1, 0.55, "raise"),
		ratio(2.1, 0.6, "raise"),    // capped at High
		ratio(0.6, 0.6, "hold"),     // above LowerBelow 0.5
		ratio(0.4, 0.35, "lower"),   // 0.6-0.25
		ratio(0.4, 0.1, "lower"),    // 0.35-0.25
		ratio(0.4, 0.05, "lower"),   // floored at Low
		ratio(1, 0.05, "hold"),      // RecentBal before: [0.6 0.35 0.1 0.05]
		ratio(1, 0.05, "hold"),      // [0.35 0.1 0.05 0.05]
		ratio(1, 0.05, "hold"),      // [0.1 0.05 0.05 0.05]
		ratio(1, 0.05, "explore"),   // all equal
		ratio(100, 0.3, "raise"),    // one step only
		ratio(0.01, 0.05, "lower"),  // one step, floored
		ratio(0.499, 0.05, "lower"), // strict
	})
}

func TestBalancerDecisionsKeepNewest32(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	now := t0
	for i := 1; i <= 40; i++ {
		now = now.Add(10 * time.Second)
		b.Tick(now)
		if n := len(b.Status().Decisions); n != min(i, 32) {
			t.Fatalf("after %d periods: %d decisions kept, want %d", i, n, min(i, 32))
		}
	}
	st := b.Status()
	if len(st.Decisions) != 32 {
		t.Fatalf("%d decisions kept, want 32", len(st.Decisions))
	}
	if first := t0.Add(9 * 10 * time.Second); !st.Decisions[0].At.Equal(first) {
		t.Fatalf("oldest kept decision at %v, want %v (the 9th)", st.Decisions[0].At, first)
	}
	if !st.Decisions[31].At.Equal(now) {
		t.Fatalf("newest decision at %v, want %v", st.Decisions[31].At, now)
	}
	// Counts cover every decision since the start: 40 periods without reads.
	if len(st.Counts) != 1 || st.Counts["no data"] != 40 {
		t.Fatalf("counts %v, want 40 no data", st.Counts)
	}
	// Status returns copies.
	st.Counts["no data"] = 0
	if got := b.Status().Counts["no data"]; got != 40 {
		t.Fatalf("Status shares its counts with the balancer: %d", got)
	}
	st.Decisions[31].Reason = "mutated"
	if got := b.Status().Decisions[31].Reason; got != "no data" {
		t.Fatalf("Status shares its decisions with the balancer: reason %q", got)
	}
}

func TestBalancerSamplesBounded(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	// The first maxSamples reads stand for the period; later, slower ones
	// are dropped.
	for i := 0; i < maxSamples; i++ {
		b.Observe(false, ms(1))
	}
	for i := 0; i < 2*maxSamples; i++ {
		b.Observe(false, ms(100))
	}
	b.Observe(true, ms(1))
	b.Tick(t0.Add(10 * time.Second))
	if d := b.Status().Decisions[0]; d.Ratio != 1 {
		t.Fatalf("ratio %v, want 1 from the first %d primary reads", d.Ratio, maxSamples)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.lat[0]); n != 0 {
		t.Fatalf("%d primary samples left after the period", n)
	}
}

func TestBalancerConcurrent(t *testing.T) {
	b := NewBalancer(BalancerConfig{Period: time.Millisecond}, t0)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				b.Observe(g%2 == 0, ms(float64(1+g)))
				b.ObserveRTT(g%2 == 1, ms(0.1))
				_ = b.Fraction()
			}
		}()
	}
	now := t0
	for i := 0; i < 200; i++ {
		now = now.Add(time.Millisecond)
		if !b.Tick(now) {
			t.Fatalf("tick %d did not end the period", i)
		}
		_ = b.Status()
	}
	wg.Wait()
	if f := b.Fraction(); f < 0.1 || f > 0.9 {
		t.Fatalf("fraction %v outside [0.1, 0.9]", f)
	}
}
