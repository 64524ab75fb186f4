package qos

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"tierdb/internal/mongoerr"
)

// GateOptions configure a Gate.
type GateOptions struct {
	// Parallelism is P, seed 004's delivered parallelism: the most
	// requests, of every tier, in process at once. Zero: no limit (then
	// only the restricted share can make a request wait).
	Parallelism int
	// Restricted is how many lower-tier (normal and low) requests may be
	// in process while the high tier is active: seed 003's restricted CPU
	// pool, as concurrency. Zero: no restriction.
	Restricted int
	// HighHold keeps the high tier active for this long after its last
	// request in process ends. A high-tier client working back to back is
	// out of process between two requests only for its own round trip;
	// without a hold those gaps would let the lower tiers take every slot
	// again. Zero: active only while high-tier requests are in process.
	HighHold time.Duration
	// Anticipation is how long a scheduling round may wait for a user
	// that has quota left and whose next request is likely on its way
	// (tierRound.anticipate). Zero: the round never waits (work-conserving).
	// With AutoAnticipation the ζ control sets it per tier instead
	// (zetaControl), and Anticipation is not used.
	Anticipation     time.Duration
	AutoAnticipation bool
	// Zeta is the initial scheduling-round quota ζ (default 8 per user
	// that waits, see newRound).
	Zeta int
	// UnfairnessBound is U_f°, CVBound is V_l°: the ζ control grows ζ
	// while the measured unfairness and latency variability are under half
	// of them and halves it when one is crossed (seed 004 §4.3.2).
	// Defaults 0.10 and 1.0.
	UnfairnessBound, CVBound float64
	// Window is the fast timescale over which U_f and V_l are measured
	// and ζ adjusted (default 100 ms).
	Window time.Duration
	// Clock defaults to RealClock().
	Clock Clock
}

// Gate is the second and third layers of admission, after the priority
// channel has let a request's tier through (seed 004, AppleS):
//
//   - within a tier, users share by weighted round-robin in scheduling
//     rounds: user i may start L_i = φ_i·ζ requests in a row per round,
//     φ_i being its weight over the weights of the users waiting (wrr.go);
//   - across tiers, at most P requests are in process at once, and while a
//     high-tier request is in process the lower tiers together hold at most
//     Restricted of them. A P that buys no throughput, only fairness
//     (FairConfig.ParallelismForFairness), holds only while two or more
//     users have requests at the normal and low tiers: one user alone has
//     nobody to be fair to, and queueing its requests at the gate would
//     only cost it CPU time and latency.
//
// High-tier requests never wait at the gate (as in the channel) but count
// towards P. Normal waiters go before low ones. Waiting is only ever for a
// slot: when nothing waits and a slot is free, Admit returns at once.
//
// A Gate is safe for concurrent use; create it with NewGate.
type Gate struct {
	clock Clock

	mu         sync.Mutex
	p          int
	restricted int
	hold       time.Duration
	// forFairness: p holds only while users share the lower tiers
	// (FairConfig.ParallelismForFairness); users counts the users of the
	// normal and low tiers with requests in process or waiting.
	forFairness bool
	users       int
	// highUntil is when the hold after the last high-tier request ends;
	// holding says a hold may still run (so the clock is only read then);
	// holdTimer ends it and dispatches the waiters it kept back.
	highUntil time.Time
	holding   bool
	holdTimer Timer
	// roundTimer asks the tiers again when a round that waits for
	// anticipated users must end (each tier's d is in its zetaControl).
	roundTimer Timer
	roundAt    time.Time
	running    [NumTiers]int
	tiers      [NumTiers]tierRound // High's has users, never a queue
	tokens     tokenTable
	// completed counts requests that ran to their done: the throughput
	// the calibration of P samples.
	completed uint64
	// slos are the latency objectives of users, by user and whether for
	// its high-tier requests (slo.go: those steer h, the others u);
	// objectiveHold is h, the anticipation the high tier's ask for.
	slos          map[sloKey]*sloState
	objectiveHold time.Duration
}

// Principal is who a request counts for at the gate: a user, its weight
// (φ, > 0; 0 counts as 1) and its p99.9 latency objective (0: none).
type Principal struct {
	User   string
	Weight float64
	SLO    time.Duration
}

// NewGate returns a Gate with nothing in process.
func NewGate(opts GateOptions) (*Gate, error) {
	if opts.Parallelism < 0 || opts.Restricted < 0 || opts.HighHold < 0 || opts.Anticipation < 0 || opts.Zeta < 0 || opts.UnfairnessBound < 0 || opts.CVBound < 0 || opts.Window < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "gate options must not be negative")
	}
	clock := opts.Clock
	if clock == nil {
		clock = RealClock()
	}
	g := &Gate{clock: clock, p: opts.Parallelism, restricted: opts.Restricted, hold: opts.HighHold, slos: map[sloKey]*sloState{}}
	for t := range g.tiers {
		g.tiers[t].users = map[string]*fairUser{}
		g.tiers[t].ctl = newZetaControl(opts, clock.Now())
	}
	return g, nil
}

// gateWaiter is one request waiting at the gate. granted and cancelled are
// guarded by Gate.mu.
type gateWaiter struct {
	user      *fairUser
	tier      Tier
	since     time.Time // when it arrived
	wake      chan struct{}
	granted   bool
	cancelled bool
	slot      uint32
	gen       uint64
	waited    time.Duration // from arrival to the grant
}

// Admission is a request's slot at the gate, from Admit: Done gives it
// back when the request ends. It is a value, so admitting allocates
// nothing; a second Done, or the zero Admission's, does nothing
// (tokenTable).
type Admission struct {
	g     *Gate
	user  *fairUser
	since time.Time // when the request arrived: its latency counts towards V_l
	// waited is how long it waited at the gate (an objective's controller
	// tells the wait from the service, slo.go).
	waited time.Duration
	slot   uint32
	gen    uint64
	tier   Tier
}

// Admit blocks until a request of p at tier t, which reached the gate at
// arrived, may be processed and returns its Admission, whose Done (or
// DoneAt) is to be called when it ends. arrived is the caller's reading of
// g's clock (time.Now for the real one: the commands layer reads it per
// request for its own histograms anyway), so a request the gate lets
// through at once costs it no reading of its own; the request's latency,
// for the fairness measures and its objective, runs from arrived to its
// end. If ctx ends first, the request leaves no trace and ctx.Err() is
// returned; a grant that races with the end of ctx is given back.
func (g *Gate) Admit(ctx context.Context, t Tier, p Principal, arrived time.Time) (Admission, error) {
	if t >= NumTiers {
		return Admission{}, mongoerr.Newf(mongoerr.BadValue, "unknown performance tier %d", uint8(t))
	}
	g.mu.Lock()
	weight := p.Weight
	if weight <= 0 {
		weight = 1
	}
	var slo *sloState
	if p.SLO > 0 {
		slo = g.sloLocked(sloKey{p.User, t == High}, p.SLO)
	}
	tr := &g.tiers[t]
	u := tr.user(p.User, weight, arrived)
	if slo == nil && u.slo != nil {
		delete(g.slos, sloKey{p.User, t == High}) // its objective was taken away
	}
	u.slo = slo
	if t != High && tr.waiting == 0 {
		// No round ends while nothing waits, but the window does: its
		// per-user figures start again and idle users are forgotten, so
		// the users map stays as small as the traffic of one window.
		tr.ctl.roundEnded(tr, arrived)
	}
	g.arrivingLocked(t, u)
	if t == High || tr.waiting == 0 && g.mayRunLocked(t) {
		slot, gen := g.takeLocked(t, u)
		g.mu.Unlock()
		return Admission{g: g, user: u, since: arrived, slot: slot, gen: gen, tier: t}, nil
	}
	if err := ctx.Err(); err != nil {
		g.leftLocked(t, u)
		g.mu.Unlock()
		return Admission{}, err
	}
	w := &gateWaiter{user: u, tier: t, since: arrived, wake: make(chan struct{}, 1)}
	tr.enqueue(w, tr.ctl.anticipation > 0)
	if g.mayRunLocked(t) {
		// A slot is free while others wait: a round holds it for users
		// with quota left (tierRound.anticipate), w's perhaps.
		g.dispatchLocked()
	}
	g.mu.Unlock()
	select {
	case <-w.wake:
		return Admission{g: g, user: u, since: arrived, waited: w.waited, slot: w.slot, gen: w.gen, tier: t}, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted {
		// The grant and the end of ctx raced: give the slot back.
		g.releaseLocked(t, u, w.slot, w.gen, 0)
		g.mu.Unlock()
		return Admission{}, ctx.Err()
	}
	w.cancelled = true
	g.tiers[t].withdraw(w)
	g.leftLocked(t, u)
	g.dispatchLocked() // a user left: one alone may run past P (forFairness)
	g.mu.Unlock()
	return Admission{}, ctx.Err()
}

// arrivingLocked counts u among the lower tiers' users with requests
// (g.users) when the request arriving is its only one in process or
// waiting; it is called before the request is taken or queued.
func (g *Gate) arrivingLocked(t Tier, u *fairUser) {
	if t != High && u.pending+u.inProcess == 0 {
		g.users++
	}
}

// leftLocked counts u out again once its last request ended or was
// withdrawn.
func (g *Gate) leftLocked(t Tier, u *fairUser) {
	if t != High && u.pending+u.inProcess == 0 {
		g.users--
	}
}

// mayRunLocked says whether a request of tier t may take a slot now.
func (g *Gate) mayRunLocked(t Tier) bool {
	total := g.running[High] + g.running[Normal] + g.running[Low]
	if g.p > 0 && total >= g.p && !(g.forFairness && g.users <= 1) {
		return false
	}
	if t == High || g.restricted <= 0 || !g.highActiveLocked() {
		return true
	}
	return g.running[Normal]+g.running[Low] < g.restricted
}

// highActiveLocked: high-tier requests are in process, or the last one
// ended less than the hold ago.
func (g *Gate) highActiveLocked() bool {
	return g.running[High] > 0 || g.holding && g.clock.Now().Before(g.highUntil)
}

// takeLocked records that a request of user u at tier t takes a slot.
func (g *Gate) takeLocked(t Tier, u *fairUser) (slot uint32, gen uint64) {
	slot, gen = g.tokens.take()
	g.running[t]++
	u.inProcess++
	u.served++
	return slot, gen
}

// grantLocked gives the waiter w a slot and wakes it.
func (g *Gate) grantLocked(w *gateWaiter) {
	w.waited = g.clock.Now().Sub(w.since)
	w.user.waited += w.waited
	w.slot, w.gen = g.takeLocked(w.tier, w.user)
	w.granted = true
	w.wake <- struct{}{}
}

// Waited is how long the request waited at the gate: zero when it was
// admitted at once.
func (a Admission) Waited() time.Duration { return a.waited }

// Done ends the admitted request now.
func (a Admission) Done() {
	if a.g != nil {
		a.DoneAt(a.g.clock.Now())
	}
}

// DoneAt ends the admitted request, which ended at end: a reading of the
// gate's clock the caller took anyway (the commands layer's, for its
// latency histograms), so that ending costs the gate no reading either.
func (a Admission) DoneAt(end time.Time) {
	g := a.g
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.tokens.live(a.slot, a.gen) {
		a.user.lastDone = end
		if a.user.slo != nil {
			a.user.slo.add(end.Sub(a.since), a.waited)
		}
		g.releaseLocked(a.tier, a.user, a.slot, a.gen, end.Sub(a.since))
	}
	g.mu.Unlock()
}

// releaseLocked ends a request's processing (latency 0: it did not run)
// and hands free slots to waiters.
func (g *Gate) releaseLocked(t Tier, u *fairUser, slot uint32, gen uint64, latency time.Duration) {
	if !g.tokens.settle(slot, gen) {
		return
	}
	g.running[t]--
	u.inProcess--
	g.leftLocked(t, u)
	if t == High && g.running[High] == 0 && g.hold > 0 && g.restricted > 0 {
		g.startHoldLocked()
	}
	if latency > 0 {
		u.lat.add(latency)
		g.completed++
	}
	g.dispatchLocked()
}

// dispatchLocked grants free slots: tier first (normal before low), then
// within the tier a latency-sensitive user's request that has waited past
// its urgency point (slo.go), then the users' shares. While a tier's round
// waits for anticipated users, its free slots stay free (lower tiers
// included) until they come or roundTimer ends the wait.
func (g *Gate) dispatchLocked() {
	if g.tiers[Normal].waiting == 0 && g.tiers[Low].waiting == 0 {
		return
	}
	now := g.clock.Now()
	for t := Normal; t < NumTiers; t++ {
		tr := &g.tiers[t]
		for tr.waiting > 0 && g.mayRunLocked(t) {
			w := tr.urgent(now)
			if w == nil {
				var wait time.Duration
				if w, wait = tr.next(now, tr.ctl.anticipation); w == nil {
					g.armRoundTimerLocked(now, wait)
					return
				}
			}
			g.grantLocked(w)
		}
		if tr.waiting > 0 {
			return
		}
	}
}

// armRoundTimerLocked dispatches again after wait, when a round's wait
// ends. A round waits until a fixed time (tierRound.anticipate), so the
// timer armed for it is kept while it waits, however often the gate asks.
func (g *Gate) armRoundTimerLocked(now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if g.roundTimer != nil {
		if at.Equal(g.roundAt) {
			return
		}
		g.roundTimer.Stop()
	}
	g.roundAt = at
	g.roundTimer = g.clock.AfterFunc(wait, func() {
		g.mu.Lock()
		g.dispatchLocked()
		g.mu.Unlock()
	})
}

// startHoldLocked keeps the high tier active for the hold and arms the
// timer that lets the lower tiers' waiters through when it ends.
func (g *Gate) startHoldLocked() {
	g.highUntil, g.holding = g.clock.Now().Add(g.hold), true
	if g.holdTimer != nil {
		g.holdTimer.Stop()
	}
	g.holdTimer = g.clock.AfterFunc(g.hold, func() {
		g.mu.Lock()
		if !g.clock.Now().Before(g.highUntil) { // not a newer hold's
			g.holding = false
		}
		g.dispatchLocked()
		g.mu.Unlock()
	})
}

// SetLimits changes P, the restricted share, the high tier's hold and the
// rounds' anticipation (fixed, 0: none, or auto) and the ζ control's
// bounds (0: keep) at run time; raising them may admit waiters at once.
func (g *Gate) SetLimits(c FairConfig) error {
	if c.Parallelism < 0 || c.Restricted < 0 || c.HighHold < 0 || c.Anticipation < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "parallelism, the restricted share, the hold and the anticipation must not be negative, got %d, %d, %v and %v", c.Parallelism, c.Restricted, c.HighHold, c.Anticipation)
	}
	g.mu.Lock()
	g.p, g.restricted, g.hold, g.forFairness = c.Parallelism, c.Restricted, c.HighHold, c.ParallelismForFairness
	g.holding = g.holding && g.hold > 0
	for t := range g.tiers {
		ctl := &g.tiers[t].ctl
		ctl.setAnticipation(c.Anticipation, c.AutoAnticipation)
		if c.UnfairnessBound > 0 {
			ctl.ufBound = c.UnfairnessBound
		}
		if c.CVBound > 0 {
			ctl.cvBound = c.CVBound
		}
	}
	g.dispatchLocked()
	g.mu.Unlock()
	return nil
}

// SetZeta resets every tier's round quota ζ to n (at least 1); the ζ
// control moves it on from there.
func (g *Gate) SetZeta(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for t := range g.tiers {
		g.tiers[t].ctl.zeta = float64(max(n, 1))
	}
}

// Completed is how many requests have run to their done, and whether the
// high tier is active (the restricted share applies) right now.
func (g *Gate) Completed() (n uint64, highActive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.completed, g.highActiveLocked()
}

// GateStats is a snapshot of a Gate.
type GateStats struct {
	Parallelism, Restricted int
	// WhileShared: P holds only while two or more users have requests
	// (FairConfig.ParallelismForFairness).
	WhileShared bool
	// Users is how many users of the normal and low tiers have requests in
	// process or waiting.
	Users     int
	InProcess [NumTiers]int
	Tiers     [NumTiers]FairStats
}

// FairStats describes the round-robin of one tier.
type FairStats struct {
	Waiting int
	// Zeta is ζ per unit of weight; Unfairness (U_f) and CV (V_l) were
	// measured over the last window in which at least two users waited.
	Zeta, Unfairness, CV float64
	Grown, Halved        uint64
	// Anticipation is the rounds' anticipation d now (fixed or found by
	// the control); UnfairnessLong the U_f over the last long span that
	// could be measured, which the control sets d by.
	Anticipation   time.Duration
	UnfairnessLong float64
	Users          []UserStats
}

// UserStats describes one user of one tier.
type UserStats struct {
	User      string
	Weight    float64
	Waiting   int
	InProcess int
	// Served is how many requests were admitted in the current window;
	// MeanWait their mean wait at the gate.
	Served   int
	MeanWait time.Duration
}

// Stats returns a consistent snapshot.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GateStats{Parallelism: g.p, Restricted: g.restricted, WhileShared: g.forFairness, Users: g.users, InProcess: g.running}
	for t := range g.tiers {
		tr := &g.tiers[t]
		fs := FairStats{Waiting: tr.waiting, Zeta: tr.ctl.zeta, Unfairness: tr.ctl.uf, CV: tr.ctl.cv, Grown: tr.ctl.grown, Halved: tr.ctl.halved, Anticipation: tr.ctl.anticipation, UnfairnessLong: tr.ctl.ufLong}
		for _, u := range tr.users {
			us := UserStats{User: u.key, Weight: u.weight, Waiting: u.pending, InProcess: u.inProcess, Served: u.served}
			if u.served > 0 {
				us.MeanWait = u.waited / time.Duration(u.served)
			}
			fs.Users = append(fs.Users, us)
		}
		slices.SortFunc(fs.Users, func(a, b UserStats) int { return strings.Compare(a.User, b.User) })
		st.Tiers[t] = fs
	}
	return st
}

// sloKey names an objective's state: a user's requests at the high tier
// and at the others are judged apart, as they are steered apart.
type sloKey struct {
	user string
	high bool
}

// sloLocked returns the objective state of key, made or updated to
// objective.
func (g *Gate) sloLocked(key sloKey, objective time.Duration) *sloState {
	s := g.slos[key]
	if s == nil {
		s = newSLOState(objective)
		s.high = key.high
		g.slos[key] = s
	}
	s.objective = objective
	return s
}

// AdjustSLOs runs one period of the SLO controller (its driver calls it
// every second or so) and forgets objectives whose user has gone and whose
// requests have left the controller's window, and the high tier's idle
// users (the other tiers' rounds forget theirs).
func (g *Gate) AdjustSLOs() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	for key, u := range g.tiers[High].users {
		if u.inProcess == 0 && now.Sub(u.lastSeen) > g.tiers[High].ctl.window {
			delete(g.tiers[High].users, key)
		}
	}
	var high, judged []*sloState
	for key, s := range g.slos {
		// An objective goes once its user has gone and its requests have
		// left the window; a high-tier one once its user has been quiet
		// for a window (high-tier users never queue, so no round forgets
		// them).
		if key.high && s.quiet >= sloWindow || !key.high && s.requests() == 0 && !g.hasUserLocked(key.user) {
			delete(g.slos, key)
			continue
		}
		if judgedNow := s.adjust(); s.high {
			high = append(high, s)
			if judgedNow {
				judged = append(judged, s)
			}
		}
	}
	g.steerHoldLocked(high, judged)
}

// steerHoldLocked moves h by the high tier's objectives (slo.go): high are
// all of them, judged those with requests in their window. One without
// requests neither asks for h nor forgoes it.
func (g *Gate) steerHoldLocked(high, judged []*sloState) {
	was := g.objectiveHold
	missed, relaxed := false, true
	for _, s := range judged {
		missed = missed || s.missed()
		relaxed = relaxed && (s.relaxed() || s.settled())
	}
	switch {
	case len(high) == 0:
		g.objectiveHold = 0
	case missed && g.objectiveHold >= sloMaxHold:
		for _, s := range judged {
			s.unmeetable = s.missed()
		}
	case missed:
		g.objectiveHold = min(sloMaxHold, max(sloHoldStep, 2*g.objectiveHold))
	case relaxed && len(judged) > 0:
		g.objectiveHold = max(0, g.objectiveHold-sloHoldStep)
	}
	if g.objectiveHold != was {
		for _, s := range high {
			s.restart()
		}
	}
}

// ObjectiveHold is h: how long the high tier's latency objectives ask the
// priority channel to hold the lower tiers after each high-tier request
// (Channel.SetObjectiveAnticipation; zero when no user at the high tier
// has one, or none needs it).
func (g *Gate) ObjectiveHold() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.objectiveHold
}

func (g *Gate) hasUserLocked(user string) bool {
	for t := range g.tiers {
		if _, ok := g.tiers[t].users[user]; ok {
			return true
		}
	}
	return false
}

// SLOs describes the objectives, by user.
func (g *Gate) SLOs() []SLOStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []SLOStats
	for key, s := range g.slos {
		out = append(out, SLOStats{User: key.user, Objective: s.objective, P999: s.p999, ServiceP999: s.svcP999, UrgentAfter: s.urgentAfter(), Ahead: s.aheadLast, Met: s.met, Unmeetable: s.unmeetable, High: s.high})
	}
	slices.SortFunc(out, func(a, b SLOStats) int {
		switch c := strings.Compare(a.User, b.User); {
		case c != 0 || a.High == b.High:
			return c
		case a.High:
			return 1 // a user's high-tier objective after its other
		}
		return -1
	})
	return out
}
