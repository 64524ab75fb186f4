package qos

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// The controller halves the urgency point of a user missing its objective,
// down to its floor, where it reports the objective unmeetable; and lets
// requests wait longer while the p99.9 is under half the objective.
func TestSLOFeedback(t *testing.T) {
	s := newSLOState(20 * time.Millisecond)
	fill := func(d time.Duration) {
		for range 2000 {
			s.add(d, d/2) // half of it waiting at the gate
		}
	}
	fill(30 * time.Millisecond)
	s.adjust()
	if s.met || s.urgency != sloUrgency/2 || s.p999 != 30*time.Millisecond {
		t.Fatalf("missed: met %v urgency %v p999 %v; want the urgency halved", s.met, s.urgency, s.p999)
	}
	for range 10 {
		fill(30 * time.Millisecond)
		s.adjust()
	}
	if s.urgency != sloMinUrgency || !s.unmeetable {
		t.Fatalf("urgency %v unmeetable %v; want the floor and unmeetable", s.urgency, s.unmeetable)
	}

	s = newSLOState(20 * time.Millisecond)
	fill(5 * time.Millisecond)
	s.adjust()
	if !s.met || s.unmeetable || s.urgency != sloUrgency*1.1 {
		t.Fatalf("comfortable: met %v urgency %v; want it 10%% later", s.met, s.urgency)
	}
	fill(15 * time.Millisecond) // met, not under half: hold
	u := s.urgency
	s.adjust()
	if s.urgency != u {
		t.Fatalf("urgency moved from %v to %v while the objective was just met", u, s.urgency)
	}

	// One slow request in a thousand is the p99.9, the window's thousand
	// (u at its ceiling, so that no change starts the window afresh).
	s = newSLOState(20 * time.Millisecond)
	s.urgency = sloMaxUrgency
	for i := range 1000 {
		d := time.Millisecond
		if i == 0 {
			d = time.Second
		}
		s.add(d, d/2)
		if i%100 == 99 && i < 999 {
			s.adjust()
		}
	}
	s.adjust()
	if s.p999 != time.Second || s.svcP999 != time.Second/2 {
		t.Fatalf("p99.9 of 1000 with one slow = %v (service %v), want 1s (500ms)", s.p999, s.svcP999)
	}
}

// One slow request is not a trend: it makes the window's p99.9 a miss,
// but the urgency is halved only once a second request misses within the
// window, and a halving starts the window afresh. (Judged on one period's
// few dozen requests, every hiccup halved u, which drifted down until the
// users with objectives went ahead of everyone.)
func TestSLOHalvesOnlyOnASecondMiss(t *testing.T) {
	s := newSLOState(20 * time.Millisecond)
	period := func(slow bool) {
		for i := range 40 {
			d := 5 * time.Millisecond
			if slow && i == 0 {
				d = 30 * time.Millisecond
			}
			s.add(d, d/2)
		}
		s.adjust()
	}
	period(true)
	if s.met || s.unmeetable || s.urgency != sloUrgency {
		t.Fatalf("one slow request: met %v unmeetable %v urgency %v; want a miss reported, the urgency kept", s.met, s.unmeetable, s.urgency)
	}
	for range sloWindow - 2 {
		period(false)
	}
	period(true) // the first slow request is still in the window
	if s.urgency != sloUrgency/2 || s.requests() != 0 {
		t.Fatalf("a second slow request within the window: urgency %v, %d requests kept; want it halved and the window afresh", s.urgency, s.requests())
	}
	period(false)
	if !s.met || s.urgency != sloUrgency/2*1.1 {
		t.Fatalf("after the halving: met %v urgency %v; want the new u judged on its own", s.met, s.urgency)
	}

	// Slow requests further apart than the window never halve it.
	s = newSLOState(20 * time.Millisecond)
	for range 3 {
		period(true)
		for range sloWindow - 1 {
			period(false)
		}
	}
	if s.urgency < sloUrgency {
		t.Fatalf("urgency %v after slow requests a window apart; want it never halved", s.urgency)
	}
}

// A miss that waiting less would not fix (the service alone misses the
// objective: a stalled server) leaves the urgency as it is and reports the
// objective unmeetable while the stall is in the window; once it is out,
// a miss halves the urgency again.
func TestSLOMissOfTheServiceKeepsTheUrgency(t *testing.T) {
	s := newSLOState(20 * time.Millisecond)
	for range 100 {
		s.add(80*time.Millisecond, 5*time.Millisecond)
	}
	s.adjust()
	if s.met || !s.unmeetable || s.urgency != sloUrgency || s.svcP999 != 75*time.Millisecond {
		t.Fatalf("stalled service: met %v unmeetable %v urgency %v service p99.9 %v; want a miss, unmeetable, urgency kept", s.met, s.unmeetable, s.urgency, s.svcP999)
	}
	for i := range sloWindow {
		for range 100 {
			s.add(30*time.Millisecond, 15*time.Millisecond)
		}
		s.adjust()
		stallInWindow := i < sloWindow-1
		if s.met || s.unmeetable != stallInWindow || (s.urgency == sloUrgency) != stallInWindow {
			t.Fatalf("period %d after the stall: met %v unmeetable %v urgency %v; want unmeetable and u kept while the stall is in the window, then u halved", i, s.met, s.unmeetable, s.urgency)
		}
	}
	if s.urgency != sloUrgency/2 {
		t.Fatalf("urgency %v, want halved", s.urgency)
	}
}

// In the round: a latency-sensitive user's request waits its turn until
// it has waited past its urgency point, then goes ahead of the round,
// furthest past it first, without spending quota.
func TestUrgentRequestsGoAhead(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := tierRound{users: map[string]*fairUser{}}
	tr.ctl = newZetaControl(GateOptions{Zeta: 1}, t0)
	enqueue := func(key string, objective time.Duration, at time.Duration) {
		u := tr.user(key, 1, t0)
		if objective > 0 {
			u.slo = newSLOState(objective) // urgent after objective/2
		}
		tr.enqueue(&gateWaiter{user: u, since: t0.Add(at)}, false)
	}
	enqueue("be1", 0, 0)
	enqueue("be2", 0, 0)
	enqueue("ls1", 20*time.Millisecond, 0) // urgent from 10 ms
	enqueue("ls2", 10*time.Millisecond, 0) // urgent from 5 ms
	enqueue("be3", 0, 0)
	var got []string
	serve := func(at time.Duration) {
		now := t0.Add(at)
		w := tr.urgent(now)
		if w == nil {
			w, _ = tr.next(now, 0)
		}
		got = append(got, w.user.key)
	}
	serve(time.Millisecond)      // nobody urgent: the round
	serve(11 * time.Millisecond) // both urgent, ls2 the more late
	serve(11 * time.Millisecond) // ls1
	serve(11 * time.Millisecond) // the round again
	if want := "[be1 ls2 ls1 be2]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	if tr.waiting != 1 || len(tr.sensitive) != 0 {
		t.Fatalf("waiting %d, sensitive %d: want 1 and 0", tr.waiting, len(tr.sensitive))
	}
	if w, _ := tr.next(t0, 0); w.user.key != "be3" {
		t.Fatalf("last %s, want be3", w.user.key)
	}
}

// Through the gate: objectives no request carries any more are forgotten,
// and qosStatus's figures come from the controller.
func TestGateSLOs(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4})
	p := Principal{User: "ls", Weight: 1, SLO: time.Millisecond}
	for range 50 {
		done, _ := gateAdmit(g, context.Background(), Normal, p)
		clk.Advance(2 * time.Millisecond)
		done()
	}
	g.AdjustSLOs()
	st := g.SLOs()
	// Admitted at once, each request's 2 ms are service: no wait to cut.
	if len(st) != 1 || st[0].Met || !st[0].Unmeetable || st[0].ServiceP999 != 2*time.Millisecond || st[0].UrgentAfter != 500*time.Microsecond {
		t.Fatalf("SLOs %+v; want ls missing by its service (2ms), unmeetable, urgent after 500µs still", st)
	}
	// No more requests: the user's entry goes at a window's end, the
	// objective once its requests have left the controller's window.
	g.mu.Lock()
	delete(g.tiers[Normal].users, "ls")
	g.mu.Unlock()
	for range sloWindow - 1 {
		g.AdjustSLOs()
		if len(g.SLOs()) != 1 {
			t.Fatal("an objective forgotten while its requests are in the window")
		}
	}
	g.AdjustSLOs()
	if len(g.SLOs()) != 0 {
		t.Fatal("an objective nobody carries was kept")
	}
}

// At the gate: the freed slot goes to a latency-sensitive request past its
// urgency point before best-effort requests that came earlier.
func TestGateServesUrgentFirst(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 1})
	ctx := context.Background()
	first, _ := gateAdmit(g, ctx, Normal, Principal{User: "first", Weight: 1})
	be := admitAsync(g, ctx, Normal, "be", 1)
	waitQueued(t, g, Normal, 1)
	ls := admitPrincipalAsync(g, ctx, Normal, Principal{User: "ls", Weight: 1, SLO: 2 * time.Millisecond})
	waitQueued(t, g, Normal, 2)
	clk.Advance(time.Millisecond) // ls is urgent from 1 ms
	first()
	select {
	case done := <-ls:
		done()
	case <-be:
		t.Fatal("the best-effort request went before the urgent one")
	case <-time.After(2 * time.Second):
		t.Fatal("nothing was admitted")
	}
	(<-be)()
}

// The ζ control measures the round-robin: a user with an objective, which
// SLO mode sends ahead on purpose, is left out of U_f and V_l, over the
// window as over the anticipation's span.
func TestFairnessMeasureLeavesObjectivesOut(t *testing.T) {
	tr := tierRound{users: map[string]*fairUser{}}
	for _, u := range []*fairUser{
		{key: "a", weight: 1, served: 150, backlogged: true},
		{key: "b", weight: 1, served: 150, backlogged: true},
		{key: "ls", weight: 1, served: 600, backlogged: true, slo: newSLOState(time.Second)},
	} {
		u.lat.add(time.Millisecond)
		u.lat.add(3 * time.Millisecond) // CV 0.5
		tr.users[u.key] = u
	}
	tr.users["ls"].lat.add(100 * time.Millisecond)
	for _, long := range []bool{false, true} {
		uf, cv, ok := measure(&tr, long)
		if !ok || uf != 0 || !long && math.Abs(cv-0.5) > 1e-9 {
			t.Errorf("long %v: U_f %.2f, V_l %.2f, ok %v; want 0, 0.5 (the two best-effort users), true", long, uf, cv, ok)
		}
	}
}

// Through the gate: a request's wait for a slot is told from its service,
// so a miss made by waiting halves the urgency.
func TestGateSLOTellsTheWaitFromTheService(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 1})
	ctx := context.Background()
	for range sloMinMisses {
		first, _ := gateAdmit(g, ctx, Normal, Principal{User: "first", Weight: 1})
		ls := admitPrincipalAsync(g, ctx, Normal, Principal{User: "ls", Weight: 1, SLO: 2 * time.Millisecond})
		waitQueued(t, g, Normal, 1)
		clk.Advance(5 * time.Millisecond)
		first()
		done := <-ls
		clk.Advance(time.Millisecond)
		done()
	}
	g.AdjustSLOs()
	st := g.SLOs()
	if len(st) != 1 || st[0].P999 != 6*time.Millisecond || st[0].ServiceP999 != time.Millisecond || st[0].Unmeetable || st[0].UrgentAfter != 500*time.Microsecond {
		t.Fatalf("SLOs %+v; want p99.9 6ms of which 1ms service, the urgency halved to 500µs", st)
	}
}

// An objective at the high tier steers h, the channel's anticipation, not
// the user's urgency (a high-tier request never waits at the gate): h
// doubles from a step while the objective is missed by two requests or
// more, up to its ceiling, where the objective is reported unmeetable;
// comes down a step a period while the p99.9 is under half the objective,
// and a step a window while it is met; ignores one slow request; and goes
// to zero once the objective is forgotten.
func TestSLOAtTheHighTierSteersTheAnticipation(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4})
	p := Principal{User: "ts", Weight: 1, SLO: 10 * time.Millisecond}
	period := func(d time.Duration, slow int) time.Duration {
		t.Helper()
		for i := range 50 {
			done, err := gateAdmit(g, context.Background(), High, p)
			if err != nil {
				t.Fatal(err)
			}
			if i < slow {
				clk.Advance(20 * time.Millisecond)
			} else {
				clk.Advance(d)
			}
			done()
		}
		g.AdjustSLOs()
		return g.ObjectiveHold()
	}
	want := []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 400 * time.Microsecond, 800 * time.Microsecond, 1600 * time.Microsecond, sloMaxHold, sloMaxHold}
	for i, w := range want {
		if h := period(time.Millisecond, 2); h != w {
			t.Fatalf("missed period %d: h %v, want %v", i, h, w)
		}
	}
	st := g.SLOs()
	if len(st) != 1 || !st[0].High || !st[0].Unmeetable || st[0].UrgentAfter != time.Duration(sloUrgency*float64(p.SLO)) {
		t.Fatalf("SLOs %+v; want ts at the high tier, unmeetable with h at its ceiling, its urgency untouched", st)
	}
	// The misses stay in the window (sloWindow periods) before the good
	// periods bring h down a step.
	if h := period(time.Millisecond, 0); h != sloMaxHold {
		t.Fatalf("with the misses in the window: h %v, want it kept", h)
	}
	for range sloWindow - 2 {
		period(time.Millisecond, 0)
	}
	if h := period(time.Millisecond, 0); h != sloMaxHold-sloHoldStep {
		t.Fatalf("under half the objective once the misses left the window: h %v, want a step down from the ceiling", h)
	}
	if h := period(6*time.Millisecond, 0); h != sloMaxHold-sloHoldStep {
		t.Fatalf("met, over half the objective: h %v, want it kept", h)
	}
	if h := period(time.Millisecond, 1); h != sloMaxHold-sloHoldStep {
		t.Fatalf("one slow request: h %v, want it kept", h)
	}
	if st := g.SLOs(); st[0].Met || st[0].Unmeetable {
		t.Fatalf("SLOs %+v; want the slow request reported as a miss, not unmeetable", st)
	}

	// Met, though not under half the objective, over a whole window since
	// h last changed: a step down all the same (no ratchet).
	for range sloWindow - 1 {
		if h := period(6*time.Millisecond, 0); h != sloMaxHold-sloHoldStep {
			t.Fatalf("met, the slow request still in the window: h %v, want it kept", h)
		}
	}
	if h := period(6*time.Millisecond, 0); h != sloMaxHold-2*sloHoldStep {
		t.Fatalf("met over a whole window: h %v, want a step down", h)
	}
	for range sloWindow - 1 {
		if h := period(6*time.Millisecond, 0); h != sloMaxHold-2*sloHoldStep {
			t.Fatalf("met, a window not yet full since the last step: h %v, want it kept", h)
		}
	}
	if h := period(6*time.Millisecond, 0); h != sloMaxHold-3*sloHoldStep {
		t.Fatalf("met over the next whole window: h %v, want the next step down", h)
	}

	// The user goes quiet (its entry at the high tier stays: nothing
	// there forgets it): the objective goes after a window's worth of
	// periods without a request, and h with it.
	for range sloWindow {
		g.AdjustSLOs()
	}
	if h := g.ObjectiveHold(); h != sloMaxHold-3*sloHoldStep || len(g.SLOs()) != 1 {
		t.Fatalf("quiet for less than a window: h %v, %d objectives; want h kept and the objective", h, len(g.SLOs()))
	}
	g.AdjustSLOs()
	if h := g.ObjectiveHold(); h != 0 || len(g.SLOs()) != 0 {
		t.Fatalf("quiet for a window: h %v, %d objectives; want 0 and none", h, len(g.SLOs()))
	}
}

// The high tier has no rounds to forget idle users in: the SLO
// controller's period does, once they have nothing in process.
func TestGateForgetsIdleHighTierUsers(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4})
	busy, _ := gateAdmit(g, context.Background(), High, Principal{User: "busy", Weight: 1})
	done, _ := gateAdmit(g, context.Background(), High, Principal{User: "gone", Weight: 1})
	done()
	clk.Advance(time.Second)
	g.AdjustSLOs()
	users := g.Stats().Tiers[High].Users
	if len(users) != 1 || users[0].User != "busy" {
		t.Fatalf("high-tier users %+v; want only the one with a request in process", users)
	}
	busy()
}

// A user's requests at the high tier and at the others are judged apart:
// misses at the normal tier halve its urgency and leave h alone, misses
// at the high tier double h and leave the urgency alone; an objective
// taken away is dropped at the user's next request at that tier.
func TestSLOJudgesAUsersTiersApart(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4})
	p := Principal{User: "both", Weight: 1, SLO: 10 * time.Millisecond}
	run := func(tier Tier, p Principal, d time.Duration) {
		t.Helper()
		for range 20 {
			done, err := gateAdmit(g, context.Background(), tier, p)
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(d)
			done()
		}
	}
	run(Normal, p, time.Millisecond) // within the objective
	run(High, p, 20*time.Millisecond)
	g.AdjustSLOs()
	st := g.SLOs()
	if len(st) != 2 || st[0].High || !st[1].High || !st[0].Met || st[1].Met || g.ObjectiveHold() != sloHoldStep {
		t.Fatalf("SLOs %+v, h %v; want the normal-tier requests met, the high-tier ones missed and h a step", st, g.ObjectiveHold())
	}
	if u := st[0].UrgentAfter; u != time.Duration(sloUrgency*1.1*float64(p.SLO)) {
		t.Fatalf("urgent after %v; want u grown for the normal-tier requests alone", u)
	}
	p.SLO = 0
	run(High, p, time.Millisecond)
	if st := g.SLOs(); len(st) != 1 || st[0].High {
		t.Fatalf("SLOs %+v; want the high-tier objective dropped, the other kept until a request at its tier", st)
	}
}
