package router

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const unknownStaleness = time.Duration(math.MaxInt64) // repl.Unbounded

func TestParseMode(t *testing.T) {
	for m := Primary; m <= Adaptive; m++ {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	names := map[Mode]string{
		Primary: "primary", PrimaryPreferred: "primaryPreferred", Secondary: "secondary",
		SecondaryPreferred: "secondaryPreferred", Nearest: "nearest", Adaptive: "adaptive",
	}
	for m, n := range names {
		if m.String() != n {
			t.Errorf("Mode(%d).String() = %q, want %q", m, m.String(), n)
		}
	}
	for _, bad := range []string{"", "Primary", "secondary ", "fastest", "primarypreferred"} {
		_, err := ParseMode(bad)
		if err == nil {
			t.Errorf("ParseMode(%q) accepted", bad)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+bad+`"`) {
			t.Errorf("ParseMode(%q) error %q does not quote the input", bad, msg)
		}
		for _, n := range names {
			if !strings.Contains(msg, n) {
				t.Errorf("ParseMode(%q) error %q does not name %q", bad, msg, n)
			}
		}
	}
}

// fixedRand returns a Rand func that always returns v.
func fixedRand(v float64) func() float64 { return func() float64 { return v } }

// balancerAt returns a balancer whose fraction has been raised to f by
// scripted periods of a congested primary.
func balancerAt(t *testing.T, f float64) *Balancer {
	t.Helper()
	b := NewBalancer(BalancerConfig{}, t0)
	now := t0
	for i := 0; b.Fraction() < f; i++ {
		if i > 10 {
			t.Fatalf("cannot raise the balancer to %v", f)
		}
		b.Observe(false, 3*time.Millisecond)
		b.Observe(true, time.Millisecond)
		now = now.Add(10 * time.Second)
		b.Tick(now)
	}
	if b.Fraction() != f {
		t.Fatalf("balancer at %v, want %v", b.Fraction(), f)
	}
	return b
}

func up(staleness time.Duration, inFlight int64) NodeView {
	return NodeView{Up: true, Staleness: staleness, InFlight: inFlight}
}

func down(staleness time.Duration, inFlight int64) NodeView {
	return NodeView{Up: false, Staleness: staleness, InFlight: inFlight}
}

func TestRoute(t *testing.T) {
	sec := time.Second
	primaryUp := up(0, 5)
	primaryDown := down(0, 0)
	fresh3 := []NodeView{up(10*time.Millisecond, 7), up(5*time.Millisecond, 2), up(time.Millisecond, 4)}
	tests := []struct {
		name     string
		pref     Preference
		primary  NodeView
		standbys []NodeView
		rand     float64 // Rand's value; Fraction is 0.5 (see below)
		want     int
		wantErr  error
	}{
		// Primary: always the primary, whatever the standbys.
		{name: "primary", pref: Preference{Mode: Primary}, primary: primaryUp, standbys: fresh3, want: PrimaryNode},
		{name: "primary ignores bound", pref: Preference{Mode: Primary, MaxStaleness: sec}, primary: primaryUp, standbys: fresh3, want: PrimaryNode},
		{name: "primary without standbys", pref: Preference{Mode: Primary}, primary: primaryUp, want: PrimaryNode},

		// PrimaryPreferred.
		{name: "primaryPreferred, primary up", pref: Preference{Mode: PrimaryPreferred}, primary: primaryUp, standbys: fresh3, want: PrimaryNode},
		{name: "primaryPreferred, primary up, busier than standbys", pref: Preference{Mode: PrimaryPreferred}, primary: up(0, 1000), standbys: fresh3, want: PrimaryNode},
		{name: "primaryPreferred, primary down: least busy standby", pref: Preference{Mode: PrimaryPreferred}, primary: primaryDown, standbys: fresh3, want: 1},
		{name: "primaryPreferred, primary down: least busy standby within bound", pref: Preference{Mode: PrimaryPreferred, MaxStaleness: 5 * time.Millisecond}, primary: primaryDown, standbys: fresh3, want: 2},
		{name: "primaryPreferred, primary down, no standby", pref: Preference{Mode: PrimaryPreferred}, primary: primaryDown, wantErr: ErrNoEligible},
		{name: "primaryPreferred, primary down, standbys too stale", pref: Preference{Mode: PrimaryPreferred, MaxStaleness: 2 * time.Millisecond}, primary: primaryDown, standbys: fresh3, wantErr: ErrNoEligible},

		// Secondary.
		{name: "secondary: least in flight", pref: Preference{Mode: Secondary}, primary: primaryUp, standbys: fresh3, want: 1},
		{name: "secondary: first of equals", pref: Preference{Mode: Secondary}, primary: primaryUp, standbys: []NodeView{up(0, 3), up(0, 1), up(0, 1)}, want: 1},
		{name: "secondary: unknown staleness is fine without a bound", pref: Preference{Mode: Secondary}, primary: primaryUp, standbys: []NodeView{up(unknownStaleness, 0)}, want: 0},
		{name: "secondary: down standbys ignored", pref: Preference{Mode: Secondary}, primary: primaryUp, standbys: []NodeView{down(0, 0), up(0, 9), down(0, 0)}, want: 1},
		{name: "secondary: bound excludes the stale least busy one", pref: Preference{Mode: Secondary, MaxStaleness: 6 * time.Millisecond}, primary: primaryUp, standbys: fresh3, want: 2},
		{name: "secondary: unknown staleness excluded by a bound", pref: Preference{Mode: Secondary, MaxStaleness: time.Hour}, primary: primaryUp, standbys: []NodeView{up(unknownStaleness, 0), up(time.Minute, 5)}, want: 1},
		{name: "secondary: none eligible (no standbys)", pref: Preference{Mode: Secondary}, primary: primaryUp, wantErr: ErrNoEligible},
		{name: "secondary: none eligible (all down)", pref: Preference{Mode: Secondary}, primary: primaryUp, standbys: []NodeView{down(0, 0), down(0, 0)}, wantErr: ErrNoEligible},
		{name: "secondary: none eligible (all stale)", pref: Preference{Mode: Secondary, MaxStaleness: 500 * time.Microsecond}, primary: primaryUp, standbys: fresh3, wantErr: ErrNoEligible},
		// Margin (2ms by default): 10ms-2ms = 8ms is the stalest accepted.
		{name: "secondary: margin, at the limit", pref: Preference{Mode: Secondary, MaxStaleness: 10 * time.Millisecond}, primary: primaryUp, standbys: []NodeView{up(8*time.Millisecond, 0)}, want: 0},
		{name: "secondary: margin, just over", pref: Preference{Mode: Secondary, MaxStaleness: 10 * time.Millisecond}, primary: primaryUp, standbys: []NodeView{up(8*time.Millisecond+1, 0)}, wantErr: ErrNoEligible},
		{name: "secondary: bound below the margin accepts nothing", pref: Preference{Mode: Secondary, MaxStaleness: time.Millisecond}, primary: primaryUp, standbys: []NodeView{up(0, 0)}, wantErr: ErrNoEligible},

		// SecondaryPreferred.
		{name: "secondaryPreferred: standby", pref: Preference{Mode: SecondaryPreferred}, primary: primaryUp, standbys: fresh3, want: 1},
		{name: "secondaryPreferred: standby within bound", pref: Preference{Mode: SecondaryPreferred, MaxStaleness: 6 * time.Millisecond}, primary: primaryUp, standbys: fresh3, want: 2},
		{name: "secondaryPreferred: falls back to primary (no standbys)", pref: Preference{Mode: SecondaryPreferred}, primary: primaryUp, want: PrimaryNode},
		{name: "secondaryPreferred: falls back to primary (all down)", pref: Preference{Mode: SecondaryPreferred}, primary: primaryUp, standbys: []NodeView{down(0, 0)}, want: PrimaryNode},
		{name: "secondaryPreferred: falls back to primary (all stale)", pref: Preference{Mode: SecondaryPreferred, MaxStaleness: 2500 * time.Microsecond}, primary: primaryUp, standbys: fresh3[:2], want: PrimaryNode},

		// Nearest: fewest in flight, primary on ties.
		{name: "nearest: standby less busy than primary", pref: Preference{Mode: Nearest}, primary: up(0, 3), standbys: fresh3, want: 1},
		{name: "nearest: primary less busy", pref: Preference{Mode: Nearest}, primary: up(0, 1), standbys: fresh3, want: PrimaryNode},
		{name: "nearest: tie goes to the primary", pref: Preference{Mode: Nearest}, primary: up(0, 2), standbys: fresh3, want: PrimaryNode},
		{name: "nearest: primary down", pref: Preference{Mode: Nearest}, primary: down(0, 0), standbys: fresh3, want: 1},
		{name: "nearest: idle stale standby excluded by bound", pref: Preference{Mode: Nearest, MaxStaleness: 4 * time.Millisecond}, primary: up(0, 3), standbys: []NodeView{up(3*time.Millisecond, 0), up(time.Millisecond, 1)}, want: 1},
		{name: "nearest: only stale standbys", pref: Preference{Mode: Nearest, MaxStaleness: 4 * time.Millisecond}, primary: up(0, 30), standbys: []NodeView{up(3*time.Millisecond, 0)}, want: PrimaryNode},
		{name: "nearest: no standbys", pref: Preference{Mode: Nearest}, primary: up(0, 30), want: PrimaryNode},
		{name: "nearest: down standby ignored", pref: Preference{Mode: Nearest}, primary: up(0, 30), standbys: []NodeView{down(0, 0), up(0, 31)}, want: PrimaryNode},

		// Adaptive with the balancer at 0.5: Rand below it goes to the
		// least busy standby, at or above it to the primary.
		{name: "adaptive: coin says standby", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, standbys: fresh3, rand: 0.49, want: 1},
		{name: "adaptive: coin at the fraction says primary", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, standbys: fresh3, rand: 0.5, want: PrimaryNode},
		{name: "adaptive: coin says primary", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, standbys: fresh3, rand: 0.9, want: PrimaryNode},
		{name: "adaptive: coin says standby, least busy chosen", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, standbys: []NodeView{up(0, 3), up(0, 5), up(0, 0)}, rand: 0, want: 2},
		{name: "adaptive: bound 0 means primary only", pref: Preference{Mode: Adaptive}, primary: primaryUp, standbys: fresh3, rand: 0, want: PrimaryNode},
		{name: "adaptive: one stale standby sends all to the primary", pref: Preference{Mode: Adaptive, MaxStaleness: 9 * time.Millisecond}, primary: primaryUp, standbys: fresh3, rand: 0, want: PrimaryNode},
		{name: "adaptive: stale standby that is down does not count", pref: Preference{Mode: Adaptive, MaxStaleness: 9 * time.Millisecond}, primary: primaryUp, standbys: []NodeView{down(time.Hour, 0), up(time.Millisecond, 4), up(time.Millisecond, 3)}, rand: 0, want: 2},
		{name: "adaptive: no standby up", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, standbys: []NodeView{down(0, 0)}, rand: 0, want: PrimaryNode},
		{name: "adaptive: no standbys", pref: Preference{Mode: Adaptive, MaxStaleness: sec}, primary: primaryUp, rand: 0, want: PrimaryNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Options{Balancer: balancerAt(t, 0.5), Rand: fixedRand(tt.rand)})
			got, err := r.Route(tt.pref, tt.primary, tt.standbys)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Route = %d, %v; want error %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Route = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestRouteAdaptiveShare checks that the coin is compared with the
// balancer's current fraction: over an even spread of Rand values, the
// share of reads sent to standbys is the fraction.
func TestRouteAdaptiveShare(t *testing.T) {
	for _, f := range []float64{0.1, 0.3, 0.9} {
		b := balancerAt(t, f)
		var next float64
		r := New(Options{Balancer: b, Rand: func() float64 { v := next; next += 0.01; return v }})
		standby := 0
		for i := 0; i < 100; i++ {
			got, err := r.Route(Preference{Mode: Adaptive, MaxStaleness: time.Second}, up(0, 0), []NodeView{up(0, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if got != PrimaryNode {
				standby++
			}
		}
		if want := int(math.Round(f * 100)); standby < want-1 || standby > want+1 {
			t.Errorf("fraction %v: %d of 100 reads on standbys, want about %d", f, standby, want)
		}
	}
}

func TestRouteAdaptiveWithoutBalancer(t *testing.T) {
	r := New(Options{Rand: fixedRand(0)})
	got, err := r.Route(Preference{Mode: Adaptive, MaxStaleness: time.Second}, up(0, 9), []NodeView{up(0, 0)})
	if err != nil || got != PrimaryNode {
		t.Fatalf("Route without a balancer = %d, %v; want the primary", got, err)
	}
	if f := r.Fraction(time.Second, []NodeView{up(0, 0)}); f != 0 {
		t.Fatalf("Fraction without a balancer = %v, want 0", f)
	}
}

func TestFraction(t *testing.T) {
	ms5 := 5 * time.Millisecond
	tests := []struct {
		name     string
		margin   time.Duration
		bound    time.Duration
		standbys []NodeView
		want     float64
	}{
		{name: "fresh standbys", bound: time.Second, standbys: []NodeView{up(0, 0), up(ms5, 0)}, want: 0.3},
		{name: "bound 0 accepts no stale data", bound: 0, standbys: []NodeView{up(0, 0)}, want: 0},
		{name: "negative bound", bound: -time.Second, standbys: []NodeView{up(0, 0)}, want: 0},
		{name: "any up standby over the bound", bound: 10 * time.Millisecond, standbys: []NodeView{up(0, 0), up(20*time.Millisecond, 0), up(0, 0)}, want: 0},
		{name: "unknown staleness is over any bound", bound: 24 * time.Hour, standbys: []NodeView{up(0, 0), up(unknownStaleness, 0)}, want: 0},
		{name: "over the bound only with the margin", bound: 10 * time.Millisecond, standbys: []NodeView{up(0, 0), up(9*time.Millisecond, 0)}, want: 0},
		{name: "at the bound minus the margin", bound: 10 * time.Millisecond, standbys: []NodeView{up(8*time.Millisecond, 0)}, want: 0.3},
		{name: "custom margin, within", margin: ms5, bound: 10 * time.Millisecond, standbys: []NodeView{up(ms5, 0)}, want: 0.3},
		{name: "custom margin, over", margin: ms5, bound: 10 * time.Millisecond, standbys: []NodeView{up(ms5+1, 0)}, want: 0},
		{name: "stale standbys that are down do not count", bound: 10 * time.Millisecond, standbys: []NodeView{down(time.Hour, 0), up(0, 0), down(unknownStaleness, 0)}, want: 0.3},
		{name: "no standby up", bound: time.Second, standbys: []NodeView{down(0, 0), down(0, 0)}, want: 0},
		{name: "no standbys", bound: time.Second, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Options{Balancer: balancerAt(t, 0.3), Margin: tt.margin})
			if got := r.Fraction(tt.bound, tt.standbys); got != tt.want {
				t.Fatalf("Fraction(%v) = %v, want %v", tt.bound, got, tt.want)
			}
		})
	}
}

// TestFractionFollowsBalancer checks that Fraction reads the balancer live
// rather than a copy taken at New.
func TestFractionFollowsBalancer(t *testing.T) {
	b := NewBalancer(BalancerConfig{}, t0)
	r := New(Options{Balancer: b})
	standbys := []NodeView{up(0, 0)}
	if f := r.Fraction(time.Second, standbys); f != 0.1 {
		t.Fatalf("Fraction = %v, want the initial 0.1", f)
	}
	b.Observe(false, 5*time.Millisecond)
	b.Observe(true, time.Millisecond)
	b.Tick(t0.Add(10 * time.Second))
	if f := r.Fraction(time.Second, standbys); f != 0.2 {
		t.Fatalf("Fraction after a raise = %v, want 0.2", f)
	}
}

func TestRouteDefaultRand(t *testing.T) {
	// With the default coin and the fraction at 0.9, some of many reads
	// go to each side; the chance of a false failure is below 1e-40.
	r := New(Options{Balancer: balancerAt(t, 0.9)})
	counts := map[int]int{}
	for i := 0; i < 1000; i++ {
		got, err := r.Route(Preference{Mode: Adaptive, MaxStaleness: time.Second}, up(0, 0), []NodeView{up(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		counts[got]++
	}
	if counts[PrimaryNode] == 0 || counts[0] == 0 {
		t.Fatalf("default Rand: reads per node %v, want both used", counts)
	}
}

func tagged(node string, staleness time.Duration, inFlight int64) NodeView {
	return NodeView{Up: true, Staleness: staleness, InFlight: inFlight, Tags: map[string]string{"node": node, "dc": "east"}}
}

func TestRouteTags(t *testing.T) {
	primary := NodeView{Up: true, InFlight: 50, Tags: map[string]string{"node": "node0", "dc": "east"}}
	standbys := []NodeView{tagged("node1", 0, 3), tagged("node2", 0, 1), tagged("node3", 20*time.Millisecond, 0)}
	tests := []struct {
		name    string
		pref    Preference
		want    int
		wantErr error
	}{
		{name: "no tag sets: any", pref: Preference{Mode: Secondary}, want: 2},
		{name: "one node", pref: Preference{Mode: Secondary, Tags: []map[string]string{{"node": "node1"}}}, want: 0},
		{name: "every tag of a set must match", pref: Preference{Mode: Secondary, Tags: []map[string]string{{"node": "node1", "dc": "west"}}}, wantErr: ErrNoEligible},
		{name: "several tags of a set", pref: Preference{Mode: Secondary, Tags: []map[string]string{{"node": "node1", "dc": "east"}}}, want: 0},
		{name: "empty set matches all", pref: Preference{Mode: Secondary, Tags: []map[string]string{{}}}, want: 2},
		{name: "unknown tag", pref: Preference{Mode: Secondary, Tags: []map[string]string{{"rack": "r1"}}}, wantErr: ErrNoEligible},
		{name: "tag and staleness", pref: Preference{Mode: Secondary, MaxStaleness: 10 * time.Millisecond, Tags: []map[string]string{{"node": "node3"}}}, wantErr: ErrNoEligible},
		{name: "secondaryPreferred falls back when no tag matches", pref: Preference{Mode: SecondaryPreferred, Tags: []map[string]string{{"node": "node9"}}}, want: PrimaryNode},
		{name: "adaptive: coin says standby, tagged one chosen", pref: Preference{Mode: Adaptive, MaxStaleness: time.Second, Tags: []map[string]string{{"node": "node1"}}}, want: 0},
		{name: "adaptive: no tag matches", pref: Preference{Mode: Adaptive, MaxStaleness: time.Second, Tags: []map[string]string{{"node": "node9"}}}, want: PrimaryNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Options{Balancer: balancerAt(t, 0.5), Rand: fixedRand(0)})
			got, err := r.Route(tt.pref, primary, standbys)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Route = %d, %v; want error %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Route = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestRouteTagSetsInOrder: MongoDB tries tag sets in order and uses the
// first that matches an eligible node ("prefer node1, else any"), which
// Preference.Tags says it follows.
//
// This fails: standby treats the tag sets as a union and takes the least
// busy node matching any of them, so [{node: node1}, {}] is the same as
// [{}].
func TestRouteTagSetsInOrder(t *testing.T) {
	r := New(Options{})
	standbys := []NodeView{tagged("node1", 0, 5), tagged("node2", 0, 1)}
	pref := Preference{Mode: Secondary, Tags: []map[string]string{{"node": "node1"}, {}}}
	if got, err := r.Route(pref, up(0, 0), standbys); err != nil || got != 0 {
		t.Errorf("Route(%v) = %d, %v; want 0 (node1, the first tag set's)", pref.Tags, got, err)
	}
	// The first set matches nothing eligible: the second applies.
	pref.Tags = []map[string]string{{"node": "node9"}, {"node": "node2"}, {}}
	if got, err := r.Route(pref, up(0, 0), []NodeView{tagged("node1", 0, 0), tagged("node2", 0, 5)}); err != nil || got != 1 {
		t.Errorf("Route(%v) = %d, %v; want 1 (node2)", pref.Tags, got, err)
	}
}

// TestRouteNearestTagsApplyToPrimary: in MongoDB, nearest's tag sets filter
// every member, the primary too; the README says tag sets {node: ...} pick
// a node.
//
// This fails: Nearest compares the least busy matching standby with the
// primary whatever the primary's tags, so {node: node1} can be served by
// the primary (node0).
func TestRouteNearestTagsApplyToPrimary(t *testing.T) {
	r := New(Options{})
	primary := NodeView{Up: true, InFlight: 0, Tags: map[string]string{"node": "node0"}}
	pref := Preference{Mode: Nearest, Tags: []map[string]string{{"node": "node1"}}}
	if got, err := r.Route(pref, primary, []NodeView{tagged("node1", 0, 5)}); err != nil || got != 0 {
		t.Errorf("Route(nearest, node1) = %d, %v; want 0 (node1), not the idle primary", got, err)
	}
}
