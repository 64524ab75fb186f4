package qos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

func newTestGate(t *testing.T, opts GateOptions) (*Gate, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	opts.Clock = clk
	g, err := NewGate(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, clk
}

// gateAdmit is g.Admit with the Admission's Done as a func, as these tests
// hold it.
func gateAdmit(g *Gate, ctx context.Context, t Tier, p Principal) (func(), error) {
	a, err := g.Admit(ctx, t, p, g.clock.Now())
	if err != nil {
		return nil, err
	}
	return a.Done, nil
}

// admitAsync starts an Admit in a goroutine and returns a channel that
// yields its done func once admitted.
func admitAsync(g *Gate, ctx context.Context, tier Tier, user string, w float64) <-chan func() {
	return admitPrincipalAsync(g, ctx, tier, Principal{User: user, Weight: w})
}

// admitPrincipalAsync is admitAsync for any principal (an objective, say);
// the channel is closed if Admit fails.
func admitPrincipalAsync(g *Gate, ctx context.Context, tier Tier, p Principal) <-chan func() {
	ch := make(chan func(), 1)
	go func() {
		done, err := gateAdmit(g, ctx, tier, p)
		if err == nil {
			ch <- done
		} else {
			close(ch)
		}
	}()
	return ch
}

// waitQueued waits until n requests wait at tier t.
func waitQueued(t *testing.T, g *Gate, tier Tier, n int) {
	t.Helper()
	for range 2000 {
		if g.Stats().Tiers[tier].Waiting == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d requests never queued at %v (have %d)", n, tier, g.Stats().Tiers[tier].Waiting)
}

func TestNewGateOptions(t *testing.T) {
	if _, err := NewGate(GateOptions{Parallelism: -1}); err == nil {
		t.Error("P < 0 accepted")
	}
	if _, err := NewGate(GateOptions{Parallelism: 2, Restricted: -1}); err == nil {
		t.Error("negative restricted share accepted")
	}
	g, _ := NewGate(GateOptions{Parallelism: 2})
	if err := g.SetLimits(FairConfig{Parallelism: -1}); err == nil {
		t.Error("SetLimits(-1) accepted")
	}
}

// P bounds what is in process; high never waits but counts.
func TestParallelismBoundsInProcess(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 2})
	ctx := context.Background()
	d1, _ := gateAdmit(g, ctx, Normal, Principal{User: "a", Weight: 1})
	d2, _ := gateAdmit(g, ctx, Normal, Principal{User: "a", Weight: 1})
	third := admitAsync(g, ctx, Normal, "a", 1)
	waitQueued(t, g, Normal, 1)
	dh, err := gateAdmit(g, ctx, High, Principal{User: "h", Weight: 1}) // beyond P: high never waits
	if err != nil {
		t.Fatal(err)
	}
	d1()
	select {
	case <-third:
		t.Fatal("admitted while high + normal already fill P")
	case <-time.After(20 * time.Millisecond):
	}
	dh()
	d3 := <-third
	if st := g.Stats(); st.InProcess[Normal] != 2 {
		t.Fatalf("in process %v, want 2 normal", st.InProcess)
	}
	d2()
	d3()
	d3() // a second call does nothing
	if st := g.Stats(); st.InProcess != [NumTiers]int{} {
		t.Fatalf("in process after all done: %v", st.InProcess)
	}
}

// A P for fairness only (FairConfig.ParallelismForFairness) holds while
// two or more users have requests: one user alone runs past it; when a
// second arrives both wait for P; when it leaves, by its request ending or
// by giving up, the first runs past P again at once.
func TestParallelismForFairnessHoldsOnlyWhileShared(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{})
	if err := g.SetLimits(FairConfig{Parallelism: 2, ParallelismForFairness: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admitted := func(ch <-chan func()) func() {
		t.Helper()
		select {
		case d := <-ch:
			return d
		case <-time.After(2 * time.Second):
			t.Fatal("not admitted")
			return nil
		}
	}
	var alone []func()
	for range 4 { // past P = 2: nobody to be fair to
		alone = append(alone, admitted(admitAsync(g, ctx, Normal, "a", 1)))
	}
	if dh, err := gateAdmit(g, ctx, High, Principal{User: "h", Weight: 1}); err != nil { // the high tier is nobody's share
		t.Fatal(err)
	} else {
		defer dh()
	}
	if st := g.Stats(); st.Users != 1 {
		t.Fatalf("%d users counted, want 1: a (the high tier is nobody's share)", st.Users)
	}
	b := admitAsync(g, ctx, Low, "b", 1)
	waitQueued(t, g, Low, 1)
	if st := g.Stats(); st.Users != 2 {
		t.Fatalf("%d users counted, want 2: a in process, b waiting", st.Users)
	}
	a5 := admitAsync(g, ctx, Normal, "a", 1) // shared now: P holds for a too
	waitQueued(t, g, Normal, 1)
	for _, d := range alone[:3] {
		d()
	}
	// a 1 and the high tier's 1 in process: P = 2 is full.
	select {
	case <-a5:
		t.Fatal("admitted past P while two users have requests")
	case <-b:
		t.Fatal("admitted past P while two users have requests")
	case <-time.After(20 * time.Millisecond):
	}
	alone[3]()
	admitted(a5)() // normal goes before low
	db := admitted(b)
	a6 := admitAsync(g, ctx, Normal, "a", 1)
	waitQueued(t, g, Normal, 1)
	db() // b leaves: a is alone again
	d6 := admitted(a6)
	// b waits again and gives up: a's next request runs past P at once.
	bctx, cancel := context.WithCancel(ctx)
	d7 := admitted(admitAsync(g, ctx, Normal, "a", 1))
	b2 := admitAsync(g, bctx, Low, "b", 1)
	waitQueued(t, g, Low, 1)
	a8 := admitAsync(g, ctx, Normal, "a", 1)
	waitQueued(t, g, Normal, 1)
	cancel()
	if _, ok := <-b2; ok {
		t.Fatal("a cancelled request was admitted")
	}
	d8 := admitted(a8)
	if st := g.Stats(); st.InProcess[Normal] != 3 || !st.WhileShared || st.Users != 1 {
		t.Fatalf("stats %+v, want 3 normal in process past P = 2, P while shared, one user", st)
	}
	d6()
	d7()
	d8()
}

// While a high-tier request is in process, the lower tiers hold at most
// their restricted share; when it ends they get all of P again.
func TestRestrictedShareWhileHighActive(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 4, Restricted: 1})
	ctx := context.Background()
	dh, _ := gateAdmit(g, ctx, High, Principal{User: "h", Weight: 1})
	d1, _ := gateAdmit(g, ctx, Normal, Principal{User: "a", Weight: 1})
	second := admitAsync(g, ctx, Low, "b", 1)
	waitQueued(t, g, Low, 1)
	dh()
	d2 := <-second
	d3, err := gateAdmit(g, ctx, Normal, Principal{User: "a", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	d1()
	d2()
	d3()
}

// Normal waiters go before low ones.
func TestNormalBeforeLow(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 1})
	ctx := context.Background()
	d, _ := gateAdmit(g, ctx, Normal, Principal{User: "x", Weight: 1})
	low := admitAsync(g, ctx, Low, "l", 1)
	waitQueued(t, g, Low, 1)
	norm := admitAsync(g, ctx, Normal, "n", 1)
	waitQueued(t, g, Normal, 1)
	d()
	dn := <-norm
	select {
	case <-low:
		t.Fatal("low admitted before the waiting normal")
	default:
	}
	dn()
	(<-low)()
}

// The scripted trace of seed 004's scheduler: with P = 1, a greedy user
// with 8 requests waiting and two polite users with one each; ζ = 2 per
// unit of weight. Each round serves up to L_i = w_i·ζ requests of a user
// in a row, in ring order.
func TestWeightedRoundRobinOrder(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 1, Zeta: 2})
	ctx := context.Background()
	hold, _ := gateAdmit(g, ctx, Normal, Principal{User: "hold", Weight: 1})
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enqueue := func(user string, w float64, n int) {
		for range n {
			wg.Add(1)
			before := g.Stats().Tiers[Normal].Waiting
			go func() {
				defer wg.Done()
				done, err := gateAdmit(g, ctx, Normal, Principal{User: user, Weight: w})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, user)
				mu.Unlock()
				done()
			}()
			waitQueued(t, g, Normal, before+1)
		}
	}
	enqueue("greedy", 1, 8)
	enqueue("polite1", 1, 1)
	enqueue("heavy", 2, 5)
	hold()
	wg.Wait()
	want := []string{
		"greedy", "greedy", "polite1", "heavy", "heavy", "heavy", "heavy", // round 1: L = 2, 2 (1 waiting), 4
		"greedy", "greedy", "heavy", // round 2
		"greedy", "greedy", // round 3
		"greedy", "greedy",
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order\n got %v\nwant %v", order, want)
	}
}

// A waiter whose context ends leaves no trace; one granted as its context
// ends gives the slot back.
func TestGateCancellation(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 1})
	d, _ := gateAdmit(g, context.Background(), Normal, Principal{User: "a", Weight: 1})
	ctx, cancel := context.WithCancel(context.Background())
	ch := admitAsync(g, ctx, Normal, "b", 1)
	waitQueued(t, g, Normal, 1)
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("a cancelled waiter was admitted")
	}
	if st := g.Stats(); st.Tiers[Normal].Waiting != 0 {
		t.Fatalf("cancelled waiter still counted: %+v", st.Tiers[Normal])
	}
	d()
	d2, err := gateAdmit(g, context.Background(), Normal, Principal{User: "c", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	d2()
	ended, stop := context.WithCancel(context.Background())
	stop()
	hold, _ := gateAdmit(g, context.Background(), Normal, Principal{User: "a", Weight: 1})
	if _, err := gateAdmit(g, ended, Normal, Principal{User: "b", Weight: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with an ended context = %v", err)
	}
	hold()
}

// The ζ control: with two users treated unequally U_f is high and ζ
// halves; with equal service it grows. U_f follows seed 004's definition.
func TestZetaControl(t *testing.T) {
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 8}, time.Unix(0, 0))
	a := tr.user("a", 1, time.Unix(0, 0))
	b := tr.user("b", 1, time.Unix(0, 0))
	a.backlogged, b.backlogged = true, true
	a.served, b.served = 30, 10 // H = 20: U_f = |30-20|/20 = 0.5
	a.lastSeen, b.lastSeen = time.Unix(1, 0), time.Unix(1, 0)
	tr.ctl.roundEnded(&tr, time.Unix(1, 0))
	if len(tr.users) != 2 {
		t.Fatal("users seen in the window were forgotten")
	}
	if tr.ctl.uf != 0.5 || tr.ctl.zeta != 4 {
		t.Fatalf("U_f %v, ζ %v; want 0.5 and halved to 4", tr.ctl.uf, tr.ctl.zeta)
	}
	// Users seen in the window are kept (Admit refreshes lastSeen).
	a.lastSeen, b.lastSeen = time.Unix(2, 0), time.Unix(2, 0)
	a.backlogged, b.backlogged = true, true
	a.served, b.served = 20, 20
	tr.ctl.roundEnded(&tr, time.Unix(2, 0))
	if tr.ctl.uf != 0 || tr.ctl.zeta != 5 {
		t.Fatalf("U_f %v, ζ %v; want 0 and grown to 5", tr.ctl.uf, tr.ctl.zeta)
	}
	// Weighted: a (weight 2) served twice b's is fair.
	a.weight = 2
	a.lastSeen, b.lastSeen = time.Unix(3, 0), time.Unix(3, 0)
	a.backlogged, b.backlogged = true, true
	a.served, b.served = 40, 20
	tr.ctl.roundEnded(&tr, time.Unix(3, 0))
	if tr.ctl.uf != 0 {
		t.Fatalf("weighted U_f %v, want 0", tr.ctl.uf)
	}
	// Within the window nothing is measured.
	a.served = 100
	tr.ctl.roundEnded(&tr, time.Unix(3, 0).Add(time.Millisecond))
	if tr.ctl.uf != 0 {
		t.Fatal("measured within the window")
	}
	// Idle users are forgotten at the next window.
	tr.ctl.roundEnded(&tr, time.Unix(10, 0))
	if len(tr.users) != 0 {
		t.Fatalf("%d idle users kept", len(tr.users))
	}
}

// Concurrency: many users and tiers admitted and released at random,
// with cancellations; under -race, and P is never exceeded.
func TestGateStress(t *testing.T) {
	for _, forFairness := range []bool{false, true} {
		t.Run(fmt.Sprint("forFairness=", forFairness), func(t *testing.T) { gateStress(t, forFairness) })
	}
}

func gateStress(t *testing.T, forFairness bool) {
	g, err := NewGate(GateOptions{Parallelism: 3, Restricted: 1, Zeta: 1, Window: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetLimits(FairConfig{Parallelism: 3, Restricted: 1, ParallelismForFairness: forFairness}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var inProcess, maxSeen int
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tier := Tier(i % 3)
			for j := range 150 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(j%5)*time.Millisecond+time.Millisecond)
				done, err := gateAdmit(g, ctx, tier, Principal{User: fmt.Sprint("u", i%5), Weight: float64(1 + i%2)})
				if err == nil {
					mu.Lock()
					inProcess++
					maxSeen = max(maxSeen, inProcess)
					mu.Unlock()
					time.Sleep(time.Duration(j%3) * 50 * time.Microsecond)
					mu.Lock()
					inProcess--
					mu.Unlock()
					done()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	st := g.Stats()
	if st.InProcess != [NumTiers]int{} || st.Tiers[Normal].Waiting+st.Tiers[Low].Waiting != 0 {
		t.Fatalf("left behind: %+v", st)
	}
	g.mu.Lock()
	users := g.users
	g.mu.Unlock()
	if users != 0 {
		t.Fatalf("%d users counted with requests after all ended", users)
	}
	// High requests may exceed P (they never wait); lower ones may not,
	// unless P is for fairness and one user is alone.
	if !forFairness && maxSeen > 3+8 {
		t.Fatalf("%d in process at once with P = 3 and 8 high clients", maxSeen)
	}
}

// The high tier stays active for the hold after its last request: the
// lower tiers keep their restricted share through a back-to-back client's
// gaps, and get all of P once the hold ends.
func TestHighHoldKeepsTheRestriction(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4, Restricted: 1, HighHold: 10 * time.Millisecond})
	ctx := context.Background()
	dh, _ := gateAdmit(g, ctx, High, Principal{User: "h"})
	dh() // the gap between two of the high client's requests
	d1, _ := gateAdmit(g, ctx, Normal, Principal{User: "a"})
	second := admitAsync(g, ctx, Normal, "b", 1)
	waitQueued(t, g, Normal, 1)
	clk.Advance(9 * time.Millisecond)
	select {
	case <-second:
		t.Fatal("admitted beyond the restricted share within the hold")
	case <-time.After(10 * time.Millisecond):
	}
	clk.Advance(time.Millisecond) // the hold ends: its timer lets the waiter in
	d2 := <-second
	d1()
	d2()
}

// Going idle and coming back never earns more than L_i per round: a user
// that returns in the same round keeps what was left of its quota.
func TestRoundQuotaSurvivesIdleness(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 2}, t0)
	greedy, polite := tr.user("greedy", 1, t0), tr.user("polite", 1, t0)
	enqueue := func(u *fairUser) { tr.enqueue(&gateWaiter{user: u}, false) }
	for range 6 {
		enqueue(greedy)
	}
	enqueue(polite)
	var got []string
	serve := func(n int) {
		for range n {
			w, _ := tr.next(t0, 0)
			got = append(got, w.user.key)
		}
	}
	serve(3) // greedy's L_i, then polite's first, which leaves the ring
	enqueue(polite)
	serve(1) // polite's second: the rest of its quota
	enqueue(polite)
	serve(3) // polite has none left: the next round, greedy first
	if want := "[greedy greedy polite polite greedy greedy polite]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

// A round with anticipation waits for a user that left the ring with quota
// left while its request is in process, and ends anyway after the
// anticipation period.
func TestRoundAnticipatesUsersWithQuota(t *testing.T) {
	const d = 2 * time.Millisecond
	t0 := time.Unix(0, 0)
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 2}, t0)
	greedy, polite := tr.user("greedy", 1, t0), tr.user("polite", 1, t0)
	enqueue := func(u *fairUser) { tr.enqueue(&gateWaiter{user: u}, true) }
	for range 6 {
		enqueue(greedy)
	}
	enqueue(polite)
	serve := func(now time.Time) string {
		w, wait := tr.next(now, d)
		if w == nil {
			return "wait " + wait.String()
		}
		w.user.inProcess++
		return w.user.key
	}
	var got []string
	for range 3 {
		got = append(got, serve(t0)) // greedy's L_i, then polite's first
	}
	// polite is in process with quota left: the round waits for it.
	got = append(got, serve(t0), serve(t0.Add(time.Millisecond)))
	polite.inProcess--
	polite.lastDone = t0.Add(1500 * time.Microsecond)
	enqueue(polite)
	got = append(got, serve(t0.Add(1600*time.Microsecond))) // its second, in the same round
	polite.inProcess--
	polite.lastDone = t0.Add(1700 * time.Microsecond)
	// polite has no quota left: a new round at once.
	got = append(got, serve(t0.Add(1800*time.Microsecond)), serve(t0.Add(1800*time.Microsecond)))
	// In the new round polite, which ended its request 0.2 ms ago, was
	// carried over with a fresh quota: the round waits for it again.
	got = append(got, serve(t0.Add(1900*time.Microsecond)))
	// Until it has been gone for the anticipation period.
	got = append(got, serve(t0.Add(3900*time.Microsecond)))
	want := "[greedy greedy polite wait 2ms wait 1ms polite greedy greedy wait 2ms greedy]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order\n got %v\nwant %s", got, want)
	}
}

// The wait is bounded: a round ends after the anticipation period even
// while the user it waits for is still in process.
func TestRoundAnticipationIsBounded(t *testing.T) {
	const d = 2 * time.Millisecond
	t0 := time.Unix(0, 0)
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 2}, t0)
	slow, other := tr.user("slow", 1, t0), tr.user("other", 1, t0)
	tr.enqueue(&gateWaiter{user: slow}, true)
	for range 4 {
		tr.enqueue(&gateWaiter{user: other}, true)
	}
	for _, want := range []string{"slow", "other", "other"} {
		w, _ := tr.next(t0, d)
		if w == nil || w.user.key != want {
			t.Fatalf("got %v, want %s", w, want)
		}
		w.user.inProcess++
	}
	for _, at := range []time.Duration{0, time.Millisecond} {
		if w, wait := tr.next(t0.Add(at), d); w != nil || wait != d-at {
			t.Fatalf("at %v got %v after %v, want a wait of %v", at, w, wait, d-at)
		}
	}
	if w, _ := tr.next(t0.Add(d), d); w == nil || w.user.key != "other" {
		t.Fatalf("got %v, want the round to end and other to go", w)
	}
}

// anticipatePolite brings g (Zeta 2, one slot free) to a round that waits
// for polite: "first" holds the slot while polite and greedy queue; then
// polite runs the first of its two requests and leaves the ring with quota
// left, greedy spends its quota, and greedy's third request, returned,
// waits for the round to end.
func anticipatePolite(t *testing.T, g *Gate) <-chan func() {
	t.Helper()
	ctx := context.Background()
	first, _ := gateAdmit(g, ctx, Normal, Principal{User: "first", Weight: 1})
	polite := admitAsync(g, ctx, Normal, "polite", 1)
	waitQueued(t, g, Normal, 1)
	var greedy []<-chan func()
	for i := range 3 {
		greedy = append(greedy, admitAsync(g, ctx, Normal, "greedy", 1))
		waitQueued(t, g, Normal, 2+i)
	}
	first()
	(<-polite)()
	(<-greedy[0])()
	(<-greedy[1])()
	return greedy[2]
}

// At the gate: while a round waits for an anticipated user, a free slot
// stays free; the round timer ends the wait after the anticipation period.
func TestGateAnticipationTimer(t *testing.T) {
	const d = 2 * time.Millisecond
	g, clk := newTestGate(t, GateOptions{Parallelism: 1, Zeta: 2, Anticipation: d})
	last := anticipatePolite(t, g)
	select {
	case <-last:
		t.Fatal("a new round began while polite was anticipated")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(d)
	select {
	case done := <-last:
		done()
	case <-time.After(2 * time.Second):
		t.Fatal("the round never ended after the anticipation period")
	}
}

// The slot a round holds free is the anticipated user's: when its request
// comes, it is admitted at once, not at the next request's end.
func TestAnticipatedUserTakesTheHeldSlotOnArrival(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 2, Zeta: 2, Anticipation: time.Second})
	ctx := context.Background()
	busy, _ := gateAdmit(g, ctx, Normal, Principal{User: "busy", Weight: 1}) // holds a slot throughout
	defer busy()
	last := anticipatePolite(t, g) // the round holds the other slot for polite
	again := admitAsync(g, ctx, Normal, "polite", 1)
	select {
	case done := <-again:
		done()
	case <-last:
		t.Fatal("greedy went beyond its quota while polite was anticipated")
	case <-time.After(2 * time.Second):
		t.Fatal("polite waited with the slot held for it free")
	}
	(<-last)() // polite's quota is spent: a new round
}

// A user the round anticipates (away with quota left) goes ahead when it
// comes back; without anticipation it joins the end.
func TestAnticipatedUserGoesAhead(t *testing.T) {
	for _, anticipating := range []bool{true, false} {
		t0 := time.Unix(0, 0)
		tr := tierRound{users: map[string]*fairUser{}}
		tr.ctl = newZetaControl(GateOptions{Zeta: 2}, t0)
		x, y := tr.user("x", 1, t0), tr.user("y", 1, t0)
		tr.enqueue(&gateWaiter{user: x}, anticipating)
		tr.enqueue(&gateWaiter{user: y}, anticipating)
		tr.enqueue(&gateWaiter{user: y}, anticipating)
		if w, _ := tr.next(t0, 0); w.user != x {
			t.Fatalf("first: %s", w.user.key)
		}
		tr.enqueue(&gateWaiter{user: x}, anticipating)
		want := map[bool]string{true: "x", false: "y"}[anticipating]
		if w, _ := tr.next(t0, 0); w.user.key != want {
			t.Fatalf("anticipating %v: %s went next, want %s", anticipating, w.user.key, want)
		}
	}
}

// A user's mean wait at the gate is what its admitted requests waited.
func TestGateMeanWait(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 1})
	ctx := context.Background()
	first, _ := gateAdmit(g, ctx, Normal, Principal{User: "a", Weight: 1})
	b := admitAsync(g, ctx, Normal, "b", 1)
	waitQueued(t, g, Normal, 1)
	clk.Advance(4 * time.Millisecond)
	first()
	done := <-b
	for _, u := range g.Stats().Tiers[Normal].Users {
		want := map[string]time.Duration{"a": 0, "b": 4 * time.Millisecond}[u.User]
		if u.MeanWait != want {
			t.Errorf("%s waited %v on average, want %v", u.User, u.MeanWait, want)
		}
	}
	done()
}

// The adaptive anticipation: ζ is the first knob both ways. While U_f is
// over its bound, ζ halves down to 1, and only then does d grow, one step
// per long span (anticipationWindows windows, U_f over the span), up to
// its ceiling; while the users are served fairly, d shrinks back to zero
// before ζ grows again; a span in which fewer than two users waited
// shrinks d too. A fixed d never moves.
func TestAdaptiveAnticipation(t *testing.T) {
	at := time.Unix(0, 0)
	// span runs one long span whose every window serves the users so.
	span := func(tr *tierRound, served ...int) {
		for range anticipationWindows {
			at = at.Add(time.Second)
			for i, n := range served {
				u := tr.user(string(rune('a'+i)), 1, at)
				u.backlogged, u.served = true, n
			}
			tr.ctl.roundEnded(tr, at)
		}
	}
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 4, AutoAnticipation: true, Anticipation: time.Hour}, at)
	if tr.ctl.anticipation != 0 {
		t.Fatalf("auto starts at %v, want 0", tr.ctl.anticipation)
	}
	// U_f = 0.5: ζ halves in the span's first windows (4 → 2 → 1), d
	// grows one step at its end.
	span(&tr, 30, 10)
	if tr.ctl.zeta != 1 || tr.ctl.anticipation != anticipationStep || tr.ctl.ufLong != 0.5 {
		t.Fatalf("ζ %v, d %v, long U_f %v; want 1, one step, 0.5", tr.ctl.zeta, tr.ctl.anticipation, tr.ctl.ufLong)
	}
	for range int(maxAnticipation/anticipationStep) + 3 {
		span(&tr, 30, 10)
	}
	if tr.ctl.anticipation != maxAnticipation {
		t.Fatalf("d %v after many unfair spans, want the ceiling %v", tr.ctl.anticipation, maxAnticipation)
	}
	// A span that is fair over its whole length although no window is:
	// the long U_f decides d.
	for i := range anticipationWindows {
		at = at.Add(time.Second)
		a, b := tr.user("a", 1, at), tr.user("b", 1, at)
		a.backlogged, b.backlogged, a.served, b.served = true, true, 30, 10
		if i%2 == 1 {
			a.served, b.served = 10, 30
		}
		tr.ctl.roundEnded(&tr, at)
	}
	if tr.ctl.ufLong != 0 || tr.ctl.anticipation != maxAnticipation-anticipationStep || tr.ctl.zeta != 1 {
		t.Fatalf("long U_f %v, d %v, ζ %v; want 0, one step down, ζ 1", tr.ctl.ufLong, tr.ctl.anticipation, tr.ctl.zeta)
	}
	// Within the bound but over half of it: d stays.
	span(&tr, 22, 18) // U_f = 0.1
	if tr.ctl.anticipation != maxAnticipation-anticipationStep {
		t.Fatalf("d %v moved inside the dead band", tr.ctl.anticipation)
	}
	// One user waiting: d shrinks.
	span(&tr, 20)
	if tr.ctl.anticipation != maxAnticipation-2*anticipationStep {
		t.Fatalf("one user: d %v, want two steps down", tr.ctl.anticipation)
	}
	// Too few admissions to tell (fewer than minLongServed a user): d
	// shrinks however uneven the counts.
	span(&tr, 3, 1)
	if tr.ctl.anticipation != maxAnticipation-3*anticipationStep {
		t.Fatalf("few admissions: d %v, want three steps down", tr.ctl.anticipation)
	}
	// A user with a latency objective goes ahead on purpose: it does not
	// count, and the others are fair.
	tr.user("a", 1, at).slo = newSLOState(time.Second)
	span(&tr, 60, 20, 20)
	if tr.ctl.anticipation != maxAnticipation-4*anticipationStep {
		t.Fatalf("objective: d %v, want four steps down", tr.ctl.anticipation)
	}
	tr.user("a", 1, at).slo = nil
	// Fair: d shrinks to zero while ζ stays; then ζ grows.
	for range int(maxAnticipation/anticipationStep) - 4 {
		span(&tr, 20, 20)
		if tr.ctl.anticipation > 0 && tr.ctl.zeta != 1 {
			t.Fatalf("ζ %v grew while d was %v", tr.ctl.zeta, tr.ctl.anticipation)
		}
	}
	span(&tr, 20, 20)
	if tr.ctl.anticipation != 0 || tr.ctl.zeta <= 1 {
		t.Fatalf("d %v, ζ %v after fair spans; want 0 and ζ grown again", tr.ctl.anticipation, tr.ctl.zeta)
	}

	// Fixed: never moves; switching to auto at run time starts from zero,
	// and a second auto keeps what the control found.
	fixed := tierRound{users: map[string]*fairUser{}}
	fixed.ctl = newZetaControl(GateOptions{Zeta: 1, Anticipation: 250 * time.Microsecond}, at)
	span(&fixed, 30, 10)
	span(&fixed, 20, 20) // a fixed d does not keep ζ from growing
	if fixed.ctl.anticipation != 250*time.Microsecond || fixed.ctl.zeta <= 1 {
		t.Fatalf("fixed d moved to %v, or ζ %v did not grow", fixed.ctl.anticipation, fixed.ctl.zeta)
	}
	span(&fixed, 30, 10)
	fixed.ctl.setAnticipation(0, true)
	span(&fixed, 30, 10)
	fixed.ctl.setAnticipation(time.Hour, true)
	if fixed.ctl.anticipation != anticipationStep {
		t.Fatalf("auto after fixed: d %v, want one step", fixed.ctl.anticipation)
	}
}

// The gate reports each tier's d and SetLimits switches between fixed and
// auto.
func TestGateAnticipationLimits(t *testing.T) {
	g, _ := newTestGate(t, GateOptions{Parallelism: 2, AutoAnticipation: true})
	if d := g.Stats().Tiers[Normal].Anticipation; d != 0 {
		t.Fatalf("auto d %v at start, want 0", d)
	}
	if err := g.SetLimits(FairConfig{Parallelism: 2, Anticipation: 300 * time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []Tier{Normal, Low} {
		if d := g.Stats().Tiers[tier].Anticipation; d != 300*time.Microsecond {
			t.Fatalf("%v: fixed d %v, want 300µs", tier, d)
		}
	}
	if err := g.SetLimits(FairConfig{Parallelism: 2, AutoAnticipation: true, UnfairnessBound: 0.2}); err != nil {
		t.Fatal(err)
	}
	if d := g.Stats().Tiers[Normal].Anticipation; d != 0 {
		t.Fatalf("back to auto: d %v, want 0", d)
	}
	// Bounds: a new one replaces the old, 0 keeps it.
	if ctl := g.tiers[Low].ctl; ctl.ufBound != 0.2 || ctl.cvBound != 1.0 {
		t.Fatalf("bounds %v and %v, want 0.2 and the default 1.0", ctl.ufBound, ctl.cvBound)
	}
	g.SetZeta(3)
	if z := g.Stats().Tiers[Normal].Zeta; z != 3 {
		t.Fatalf("ζ %v after SetZeta(3)", z)
	}
	g.SetZeta(0)
	if z := g.Stats().Tiers[Low].Zeta; z != 1 {
		t.Fatalf("ζ %v after SetZeta(0), want at least 1", z)
	}
}

// TestAdmissionRunsFromTheCallersArrival: the gate reads no clock when it
// admits at once; the request's latency runs from the arrival its caller
// read, and its Admission says how long it waited at the gate.
func TestAdmissionRunsFromTheCallersArrival(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 1})
	ctx := context.Background()
	ls := Principal{User: "ls", Weight: 1, SLO: time.Second}
	arrived := clk.Now()
	clk.Advance(2 * time.Millisecond) // parsing, the channel: before the gate
	a, err := g.Admit(ctx, Normal, ls, arrived)
	if err != nil || a.Waited() != 0 {
		t.Fatalf("uncontended Admit: waited %v, err %v; want 0, nil", a.Waited(), err)
	}
	clk.Advance(time.Millisecond)
	a.Done()
	g.AdjustSLOs()
	if st := g.SLOs(); len(st) != 1 || st[0].P999 != 3*time.Millisecond || st[0].ServiceP999 != 3*time.Millisecond {
		t.Fatalf("SLOs %+v; want a latency of 3ms from the caller's arrival, all of it service", st)
	}

	first, _ := g.Admit(ctx, Normal, Principal{User: "first", Weight: 1}, clk.Now())
	got := make(chan Admission, 1)
	go func() {
		a, err := g.Admit(ctx, Normal, ls, clk.Now())
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	waitQueued(t, g, Normal, 1)
	clk.Advance(5 * time.Millisecond)
	first.Done()
	if a := <-got; a.Waited() != 5*time.Millisecond {
		t.Errorf("queued Admit waited %v, want 5ms", a.Waited())
	} else {
		a.Done()
	}
}

// A tier where nothing waits has no rounds, yet its window still ends: the
// per-user figures cover one window and users gone idle are forgotten, so
// a stream of distinct users (one per peer host, say) cannot grow the
// gate's memory.
func TestUncontendedTierForgetsIdleUsers(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Window: 100 * time.Millisecond})
	for i := range 1000 {
		done, err := gateAdmit(g, context.Background(), Normal, Principal{User: fmt.Sprint("peer ", i), Weight: 1})
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	if n := len(g.Stats().Tiers[Normal].Users); n != 1000 {
		t.Fatalf("%d users within the window, want 1000", n)
	}
	clk.Advance(300 * time.Millisecond)
	for range 3 {
		done, err := gateAdmit(g, context.Background(), Normal, Principal{User: "steady", Weight: 1})
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	users := g.Stats().Tiers[Normal].Users
	if len(users) != 1 || users[0].User != "steady" || users[0].Served != 3 {
		t.Fatalf("after the window: %+v, want only steady, served 3", users)
	}
	clk.Advance(300 * time.Millisecond)
	done, err := gateAdmit(g, context.Background(), Normal, Principal{User: "steady", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	done()
	if users := g.Stats().Tiers[Normal].Users; len(users) != 1 || users[0].Served != 1 {
		t.Fatalf("a new window: %+v, want steady served 1 (the count starts again)", users)
	}
}

// ζ halves when the latency CV crosses its bound, even with U_f at 0, and
// holds while either figure lies between half its bound and the bound.
func TestZetaControlByCV(t *testing.T) {
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 8, UnfairnessBound: 0.1, CVBound: 0.5}, time.Unix(0, 0))
	a := tr.user("a", 1, time.Unix(0, 0))
	b := tr.user("b", 1, time.Unix(0, 0))
	window := func(sec int64, latencies ...time.Duration) {
		t.Helper()
		for _, u := range []*fairUser{a, b} {
			u.backlogged, u.served, u.lastSeen = true, 20, time.Unix(sec, 0)
			for _, l := range latencies {
				u.lat.add(l)
			}
		}
		tr.ctl.roundEnded(&tr, time.Unix(sec, 0))
	}
	// 1 and 9 ms: μ 5 ms, σ 4 ms, CV 0.8 over the bound: ζ halves.
	window(1, time.Millisecond, 9*time.Millisecond)
	if math.Abs(tr.ctl.cv-0.8) > 1e-9 || tr.ctl.zeta != 4 {
		t.Fatalf("CV %v, ζ %v; want 0.8 and halved to 4", tr.ctl.cv, tr.ctl.zeta)
	}
	// 7 and 13 ms: CV 0.3, between half the bound (0.25) and the bound:
	// ζ holds.
	window(2, 7*time.Millisecond, 13*time.Millisecond)
	if tr.ctl.zeta != 4 {
		t.Fatalf("CV %v: ζ %v, want it held at 4", tr.ctl.cv, tr.ctl.zeta)
	}
	// 9 and 11 ms: CV 0.1, and U_f 0: both under half their bounds: ζ
	// grows.
	window(3, 9*time.Millisecond, 11*time.Millisecond)
	if tr.ctl.zeta != 5 {
		t.Fatalf("CV %v: ζ %v, want it grown to 5", tr.ctl.cv, tr.ctl.zeta)
	}
}
