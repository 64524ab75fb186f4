package qos

import (
	"slices"
	"time"
)

// SLO mode (seed 004 §5.3, after PSLO): a user may carry a p99.9 latency
// objective o. Its waiting requests take their turn in the round-robin like
// everyone's, but one that has waited u·o (its urgency point) is admitted
// ahead of the round (Gate.urgentLocked): earliest deadline first among
// latency-sensitive users. Every period the controller judges the user's
// p99.9 over its recent requests (those of the last sloWindow periods
// since u last changed) against o and moves u:
//
//	p99.9 > o, and two requests or more over o    u ← max(u_min, u/2)  (serve it sooner)
//	p99.9 < o/2                                  u ← min(u_max, 1.1·u) (it can wait longer)
//
// so a latency-sensitive user is served ahead only as much as its
// objective needs (the least share), and best-effort users get the rest.
// A typical latency-sensitive client issues a few dozen requests a period,
// so a period's p99.9 is close to its maximum: judged on one period, one
// slow request halved u, and u, which grows back only under o/2, drifted
// down run after run until the users with objectives went ahead of
// everyone (apples-slo, 140 best-effort users: 1147 against 412 ops/s,
// and the objective missed all the same). Over the window one slow
// request is seen as what it is, and a change of u starts the window
// afresh, so its effect is what the next judgement sees.
// Going ahead only shortens a request's wait at the gate: when the p99.9
// of the service alone (latency less that wait) misses the objective, u
// is left as it is and the objective reported unmeetable, as it is when
// missed with u at u_min: a stall of the server must not send the user
// ahead of everyone for the half minute u would take to grow back.
//
// Why deadlines, not weights: a weight sets how many of a user's queued
// requests go per round, and a user with one request in flight (the usual
// latency-sensitive client) has one queued whatever its weight; its
// latency is the round's length. Measured on apples-slo, scaling weights
// was no better than fixed equal ones.
//
// Nothing waits with no parallelism limit (P = 0): no objective can then
// be enforced this way; the controller reports the misses as they are.
//
// Objectives at the high tier (our addition). A high-tier request never
// waits at the gate, so u can do nothing for it: what it waits behind is
// the lower tiers' work in the server. For a user whose requests run at
// the high tier the controller moves h instead, the anticipation those
// objectives ask of the priority channel (lower tiers held h after each
// high-tier request, in anticipation of the next: anticipation.go), by the
// same rules the other way round (Gate.steerHoldLocked):
//
//	a high-tier p99.9 > o, two requests or more over o   h ← min(h_max, max(h_step, 2·h))
//	every high-tier p99.9 < o/2, or met over a whole     h ← max(0, h − h_step)
//	window since h last changed
//
// so the lower tiers are held only as long as the objectives need, and a
// miss with h at h_max is reported unmeetable: the server's own tail. h
// then stays at h_max while that user keeps coming (its status says why
// the lower tiers pause), and goes once its requests have left the
// window. Each user's high-tier requests are judged apart from its
// others (Gate.slos is keyed by both), as they are steered apart. The
// second way down is what u lacks: an objective near the server's idle
// tail is rarely under o/2, and every hiccup would ratchet h up for good,
// a pause of the lower tiers after every high-tier request. h is
// one value for the tier (the channel holds the lower tiers for every
// high-tier client alike), and a change of it starts every high-tier
// objective's window afresh.

const (
	sloSamples    = 4096 // latencies kept per user over the window: enough for a p99.9
	sloWindow     = 10   // periods a judgement looks back over at most
	sloMinMisses  = 2    // requests over the objective before u is halved (or h doubled)
	sloMinUrgency = 1.0 / 32
	sloMaxUrgency = 0.9
	sloUrgency    = 0.5 // to begin with
	sloHoldStep   = 100 * time.Microsecond
	sloMaxHold    = 2 * time.Millisecond
)

// sloPeriod is one period's latencies (lat) and the same less their wait
// at the gate (svc, the service): its last sloSamples/sloWindow requests.
type sloPeriod struct {
	lat, svc []time.Duration
	next     int
}

// sloState is one user's objective and the controller's view of it.
type sloState struct {
	objective time.Duration
	urgency   float64 // u: a request waiting u·objective goes ahead
	// window are the periods judged, cur the current one's index, ran how
	// many periods ended since it last started afresh; p999 and svcP999
	// are the window's last p99.9s.
	window        [sloWindow]sloPeriod
	cur, ran      int
	quiet         int // periods in a row that ended without a request
	p999, svcP999 time.Duration
	// met: the last p99.9 was within the objective; unmeetable: it was
	// missed with the urgency (or h) at its utmost, or by the service
	// alone; misses counts the window's requests over the objective.
	met, unmeetable bool
	misses          int
	// high: the user's requests run at the high tier, so the controller
	// steers h, not u.
	high bool
	// ahead counts requests admitted ahead of the round in this period,
	// aheadLast in the last one.
	ahead, aheadLast uint64
}

func newSLOState(objective time.Duration) *sloState {
	return &sloState{objective: objective, urgency: sloUrgency}
}

// urgentAfter is how long a request of the user may wait in the round.
func (s *sloState) urgentAfter() time.Duration {
	return time.Duration(s.urgency * float64(s.objective))
}

// add records a request's latency d, of which it waited at the gate.
func (s *sloState) add(d, waited time.Duration) {
	p := &s.window[s.cur]
	if len(p.lat) < sloSamples/sloWindow {
		p.lat, p.svc = append(p.lat, d), append(p.svc, d-waited)
		return
	}
	p.lat[p.next], p.svc[p.next] = d, d-waited
	p.next = (p.next + 1) % len(p.lat)
}

// requests is how many requests the window holds.
func (s *sloState) requests() int {
	n := 0
	for i := range s.window {
		n += len(s.window[i].lat)
	}
	return n
}

// p999 is the p99.9 of ds.
func p999(ds []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[min(len(sorted)-1, len(sorted)*999/1000)]
}

// adjust is one step of the feedback control, at the end of a period. It
// reports whether the window held requests to judge; for a high-tier
// objective it only judges, and the gate steers h (steerHoldLocked).
func (s *sloState) adjust() (judged bool) {
	s.aheadLast, s.ahead = s.ahead, 0
	s.ran++
	if len(s.window[s.cur].lat) == 0 {
		s.quiet++
	} else {
		s.quiet = 0
	}
	judged = s.judge()
	if judged && !s.high {
		s.steerUrgency()
	}
	s.cur = (s.cur + 1) % sloWindow
	s.window[s.cur] = sloPeriod{}
	return judged
}

// judge takes the window's p99.9s and misses; false when it holds no
// request.
func (s *sloState) judge() bool {
	var lat, svc []time.Duration
	s.misses = 0
	for i := range s.window {
		lat, svc = append(lat, s.window[i].lat...), append(svc, s.window[i].svc...)
		for _, d := range s.window[i].lat {
			if d > s.objective {
				s.misses++
			}
		}
	}
	if len(lat) == 0 {
		return false
	}
	s.p999, s.svcP999 = p999(lat), p999(svc)
	s.met = s.p999 <= s.objective
	s.unmeetable = false
	return true
}

// missed: over the objective, and not by one slow request alone.
func (s *sloState) missed() bool { return !s.met && s.misses >= sloMinMisses }

// relaxed: so far within the objective that it may be served less eagerly.
func (s *sloState) relaxed() bool { return s.met && s.p999 < s.objective/2 }

// settled: met over a whole window since it last started afresh.
func (s *sloState) settled() bool { return s.met && s.ran >= sloWindow }

// steerUrgency moves u by the judgement.
func (s *sloState) steerUrgency() {
	was := s.urgency
	switch {
	case s.relaxed():
		s.urgency = min(sloMaxUrgency, s.urgency*1.1)
	case !s.missed():
		// Met, or one slow request: not yet a reason to serve the user sooner.
	case s.urgency <= sloMinUrgency || s.svcP999 > s.objective:
		s.unmeetable = true
	default:
		s.urgency = max(sloMinUrgency, s.urgency/2)
	}
	if s.urgency != was {
		s.restart()
	}
}

// restart starts the window afresh, so that the next judgement sees a new
// u or h on its own.
func (s *sloState) restart() { s.window, s.ran = [sloWindow]sloPeriod{}, 0 }

// SLOStats is one objective as the controller sees it.
type SLOStats struct {
	User      string
	Objective time.Duration
	P999      time.Duration // over the controller's window (slo.go)
	// ServiceP999 is the p99.9 of the same requests' latency less their
	// wait at the gate: what no place in the round can shorten.
	ServiceP999 time.Duration
	// UrgentAfter is how long the user's requests now wait in the round
	// before they go ahead of it; Ahead counts those that did in the last
	// period.
	UrgentAfter time.Duration
	Ahead       uint64
	Met         bool
	Unmeetable  bool
	// High: the user's requests run at the high tier, so its objective
	// steers the channel's anticipation (Gate.ObjectiveHold), not
	// UrgentAfter.
	High bool
}
