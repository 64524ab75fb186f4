package qos

import (
	"slices"
	"time"
)

// SLO mode (seed 004 §5.3, after PSLO): a user may carry a p99.9 latency
// objective o. Its waiting requests take their turn in the round-robin like
// everyone's, but one that has waited u·o (its urgency point) is admitted
// ahead of the round (Gate.urgentLocked): earliest deadline first among
// latency-sensitive users. Every period the controller compares the user's
// p99.9 over its recent requests with o and moves u:
//
//	p99.9 > o        u ← max(u_min, u/2)     (serve it sooner)
//	p99.9 < o/2      u ← min(u_max, 1.1·u)   (it can wait longer)
//
// so a latency-sensitive user is served ahead only as much as its
// objective needs (the least share), and best-effort users get the rest.
// Going ahead only shortens a request's wait at the gate: when the p99.9
// of the service alone (latency less that wait) misses the objective, u
// is left as it is and the objective reported unmeetable, as it is when
// missed with u at u_min: a stall of the server must not send the user
// ahead of everyone for the half minute u would take to grow back.
// Whether p99.9 > o is judged on the period's requests alone: a few dozen
// for a typical latency-sensitive client, so close to their maximum.
//
// Why deadlines, not weights: a weight sets how many of a user's queued
// requests go per round, and a user with one request in flight (the usual
// latency-sensitive client) has one queued whatever its weight; its
// latency is the round's length. Measured on apples-slo, scaling weights
// was no better than fixed equal ones.
//
// Nothing waits with no parallelism limit (P = 0): no objective can then
// be enforced this way; the controller reports the misses as they are.

const (
	sloSamples    = 4096 // latencies kept per user: enough for a p99.9
	sloMinUrgency = 1.0 / 32
	sloMaxUrgency = 0.9
	sloUrgency    = 0.5 // to begin with
)

// sloState is one user's objective and the controller's view of it.
type sloState struct {
	objective time.Duration
	urgency   float64 // u: a request waiting u·objective goes ahead
	// lat are the period's latencies, svc the same less their wait at the
	// gate (the service); p999 and svcP999 their last p99.9.
	lat, svc      []time.Duration
	next          int
	p999, svcP999 time.Duration
	// met: the last p99.9 was within the objective; unmeetable: it was
	// missed with the urgency at its lowest, or by the service alone.
	met, unmeetable bool
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
	if len(s.lat) < sloSamples {
		s.lat, s.svc = append(s.lat, d), append(s.svc, d-waited)
		return
	}
	s.lat[s.next], s.svc[s.next] = d, d-waited
	s.next = (s.next + 1) % sloSamples
}

// p999 is the p99.9 of ds.
func p999(ds []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[min(len(sorted)-1, len(sorted)*999/1000)]
}

// adjust is one step of the feedback control.
func (s *sloState) adjust() {
	s.aheadLast, s.ahead = s.ahead, 0
	if len(s.lat) == 0 {
		return
	}
	s.p999, s.svcP999 = p999(s.lat), p999(s.svc)
	s.met = s.p999 <= s.objective
	s.unmeetable = false
	switch {
	case !s.met && (s.urgency <= sloMinUrgency || s.svcP999 > s.objective):
		s.unmeetable = true
	case !s.met:
		s.urgency = max(sloMinUrgency, s.urgency/2)
	case s.p999 < s.objective/2:
		s.urgency = min(sloMaxUrgency, s.urgency*1.1)
	}
	s.lat, s.svc, s.next = s.lat[:0], s.svc[:0], 0
}

// SLOStats is one objective as the controller sees it.
type SLOStats struct {
	User      string
	Objective time.Duration
	P999      time.Duration // over the last period with requests
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
}
