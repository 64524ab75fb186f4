package qos

import (
	"math"
	"slices"
	"time"
)

// fairUser is one user of one tier at the gate: its FIFO of waiting
// requests (seed 004 §4.1, the per-user queue), its quota left in the
// current round and what the fairness measurements need.
type fairUser struct {
	key    string
	weight float64
	queue  []*gateWaiter // FIFO; cancelled waiters are skipped lazily
	// pending is how many of queue are still waiting.
	pending   int
	quota     int    // requests left in round
	round     uint64 // the round its quota belongs to
	inRing    bool   // in the tier's round-robin ring
	away      bool   // in the tier's away list
	ahead     bool   // joined the ring ahead of the others (enqueue)
	sensitive bool   // in the tier's list of latency-sensitive users
	inProcess int
	// Measured over the current window: admissions, whether it waited at
	// some point (a backlogged user, which U_f compares), latencies.
	served     int
	waited     time.Duration // in all, by the requests admitted
	backlogged bool
	// servedLong and backloggedLong are served and backlogged over the
	// anticipation's longer span, up to the current window.
	servedLong     int
	backloggedLong bool
	lat            latencyStats
	lastSeen       time.Time
	// lastDone is when its last request in process ended (anticipation).
	lastDone time.Time
	slo      *sloState // the user's latency objective, if any
}

// head is the user's oldest waiting request, or nil.
func (u *fairUser) head() *gateWaiter {
	if u.pending == 0 {
		return nil
	}
	for u.queue[0].cancelled {
		u.queue[0] = nil
		u.queue = u.queue[1:]
	}
	return u.queue[0]
}

func (u *fairUser) pop() *gateWaiter {
	for {
		w := u.queue[0]
		u.queue[0] = nil
		u.queue = u.queue[1:]
		if !w.cancelled {
			u.pending--
			return w
		}
	}
}

// tierRound is the weighted round-robin of one tier, with its ζ control.
type tierRound struct {
	users   map[string]*fairUser
	ring    []*fairUser // users with waiting requests, in the order they arrived
	cur     int         // the ring user being served
	round   uint64      // rounds begun
	waiting int
	ctl     zetaControl
	// away are users that left the ring in this round or were carried
	// into it (newRound); holdSince is when the round began to wait for
	// them (zero: it is not waiting). See anticipate.
	away      []*fairUser
	holdSince time.Time
	// sensitive are users with a latency objective that may have requests
	// waiting (urgent).
	sensitive []*fairUser
}

// user returns the tier's entry for key, created on first use; weight is
// the user's current weight (≤ 0 counts as 1).
func (tr *tierRound) user(key string, weight float64, now time.Time) *fairUser {
	if weight <= 0 {
		weight = 1
	}
	u := tr.users[key]
	if u == nil {
		u = &fairUser{key: key, round: tr.round - 1} // no quota in this round yet
		tr.users[key] = u
	}
	u.weight, u.lastSeen = weight, now
	return u
}

// enqueue queues w. A user that starts waiting joins the ring with what
// is left of its quota for the current round (all of L_i if it had none
// yet this round), so going idle and coming back never earns more than L_i
// per round. It joins at the end, unless the round anticipates it
// (anticipating, and it is away with quota left, see anticipate): then it
// goes ahead of the others, after those that went ahead before it, still
// within its quota. Without anticipation a returning user does not go
// ahead: with many users, those not yet served in the round would wait
// behind every other user's whole quota.
func (tr *tierRound) enqueue(w *gateWaiter, anticipating bool) {
	u := w.user
	u.queue = append(u.queue, w)
	u.pending++
	u.backlogged = true
	tr.waiting++
	if u.slo != nil && !u.sensitive {
		u.sensitive = true
		tr.sensitive = append(tr.sensitive, u)
	}
	if u.inRing {
		return
	}
	u.inRing = true
	if u.round != tr.round {
		u.quota, u.round = tr.ctl.quota(u.weight), tr.round
		u.ahead = false
	} else {
		u.ahead = anticipating && u.away && u.quota > 0
	}
	if !u.ahead {
		tr.ring = append(tr.ring, u)
		return
	}
	i := min(tr.cur, len(tr.ring))
	for i < len(tr.ring) && tr.ring[i].ahead {
		i++
	}
	tr.ring = slices.Insert(tr.ring, i, u)
}

// withdraw forgets a cancelled waiter (it stays in its user's queue until
// popped past).
func (tr *tierRound) withdraw(w *gateWaiter) {
	w.user.pending--
	tr.waiting--
}

// next picks the waiter to admit (tr.waiting > 0): the current user's next
// request while its round quota L_i lasts (seed 004: L_i requests in a
// row, for per-user locality), then the next user's in ring order. When no
// waiting user has quota left, a new round begins, unless the round still
// anticipates users (anticipate): then next admits nobody and says how
// long to wait before asking again.
func (tr *tierRound) next(now time.Time, anticipation time.Duration) (*gateWaiter, time.Duration) {
	for looked := 0; ; looked++ {
		if looked > len(tr.ring) {
			if wait := tr.anticipate(now, anticipation); wait > 0 {
				return nil, wait
			}
			tr.newRound(now, anticipation)
			looked = 0
		}
		if tr.cur >= len(tr.ring) {
			tr.cur = 0
		}
		u := tr.ring[tr.cur]
		if u.pending == 0 {
			tr.leaveRing(tr.cur)
			continue
		}
		if u.quota <= 0 {
			tr.cur++
			continue
		}
		u.quota--
		tr.waiting--
		tr.holdSince = time.Time{}
		w := u.pop()
		switch {
		case u.pending == 0:
			tr.leaveRing(tr.cur)
			if !u.away {
				u.away = true
				tr.away = append(tr.away, u)
			}
		case u.quota == 0:
			tr.cur++
		}
		return w, 0
	}
}

// urgent takes out of its queue, and returns, the request of a
// latency-sensitive user that is furthest past its urgency point (earliest
// deadline first), if any: it goes ahead of the round and spends no quota
// (slo.go).
func (tr *tierRound) urgent(now time.Time) *gateWaiter {
	var best *fairUser
	var bestLate time.Duration
	kept := 0
	for _, u := range tr.sensitive {
		w := u.head()
		if w == nil || u.slo == nil {
			u.sensitive = false // nothing waits, or no objective any more
			continue
		}
		tr.sensitive[kept] = u
		kept++
		if late := now.Sub(w.since) - u.slo.urgentAfter(); late >= 0 && (best == nil || late > bestLate) {
			best, bestLate = u, late
		}
	}
	clear(tr.sensitive[kept:])
	tr.sensitive = tr.sensitive[:kept]
	if best == nil {
		return nil
	}
	tr.waiting--
	best.slo.ahead++
	return best.pop()
}

// anticipate says how long the round should still wait before it ends.
//
// Seed 004's rounds assume that every backlogged user issues its quota in
// each round. A user with one request at a time is backlogged only
// between its round trips: while its request is in process, or its client
// turns around, the others' quotas run out, a new round begins and they
// get fresh ones, so the round-robin gives each user what it asks for
// rather than an equal share. Instead, such a user stays in the round
// (away): it keeps its quota when it leaves the ring, gets one in the
// next round if it is still active then (newRound), and while it has
// quota left and a request in process, or ended one less than d ago, the
// round waits for its next request (the idea of anticipatory disk
// scheduling): for at most d from when it began to wait, then the round
// ends anyway. This is not work-conserving: slots can stay free for up to
// d while requests wait. d = 0 turns it off.
func (tr *tierRound) anticipate(now time.Time, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if tr.holdSince.IsZero() {
		tr.holdSince = now
	}
	left := tr.holdSince.Add(d).Sub(now)
	if left <= 0 {
		return 0
	}
	for _, u := range tr.away {
		if u.round == tr.round && u.quota > 0 && !u.inRing && (u.inProcess > 0 || now.Sub(u.lastDone) < d) {
			return left
		}
	}
	return 0
}

func (tr *tierRound) leaveRing(i int) {
	tr.ring[i].inRing = false
	copy(tr.ring[i:], tr.ring[i+1:])
	tr.ring[len(tr.ring)-1] = nil
	tr.ring = tr.ring[:len(tr.ring)-1]
}

// newRound starts a scheduling round: the ζ control runs (at most once per
// window), then every waiting user, and every user away that is still
// active (anticipate), gets L_i = φ_i·ζ.
func (tr *tierRound) newRound(now time.Time, anticipation time.Duration) {
	tr.ctl.roundEnded(tr, now)
	tr.round++
	for _, u := range tr.ring {
		u.quota, u.round = tr.ctl.quota(u.weight), tr.round
	}
	tr.cur = 0
	// Users away from the ring that are still active are carried into the
	// new round with its quota.
	kept := 0
	for _, u := range tr.away {
		if anticipation > 0 && (u.inProcess > 0 || now.Sub(u.lastDone) < anticipation) {
			if !u.inRing {
				u.quota, u.round = tr.ctl.quota(u.weight), tr.round
			}
			tr.away[kept] = u
			kept++
		} else {
			u.away = false
		}
	}
	clear(tr.away[kept:])
	tr.away, tr.holdSince = tr.away[:kept], time.Time{}
}

// latencyStats accumulates what a coefficient of variation needs.
type latencyStats struct {
	n          int
	sum, sumSq float64 // seconds
}

func (l *latencyStats) add(d time.Duration) {
	s := d.Seconds()
	l.n++
	l.sum += s
	l.sumSq += s * s
}

// cv is the coefficient of variation σ/μ; ok is false with fewer than two
// samples.
func (l *latencyStats) cv() (cv float64, ok bool) {
	if l.n < 2 || l.sum == 0 {
		return 0, false
	}
	mean := l.sum / float64(l.n)
	variance := math.Max(0, l.sumSq/float64(l.n)-mean*mean)
	return math.Sqrt(variance) / mean, true
}
