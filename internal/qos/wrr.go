package qos

import (
	"math"
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
	inProcess int
	// Measured over the current window: admissions, whether it waited at
	// some point (a backlogged user, which U_f compares), latencies.
	served     int
	backlogged bool
	lat        latencyStats
	lastSeen   time.Time
	slo        *sloState // the user's latency objective, if any
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

// enqueue queues w. A user that starts waiting joins the end of the ring
// with what is left of its quota for the current round (all of L_i if it
// had none yet this round), so going idle and coming back never earns
// more than L_i per round.
func (tr *tierRound) enqueue(w *gateWaiter) {
	u := w.user
	u.queue = append(u.queue, w)
	u.pending++
	u.backlogged = true
	tr.waiting++
	if u.inRing {
		return
	}
	u.inRing = true
	tr.ring = append(tr.ring, u)
	if u.round != tr.round {
		u.quota, u.round = tr.ctl.quota(u.weight), tr.round
	}
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
// waiting user has quota left, a new round begins.
func (tr *tierRound) next(now time.Time) *gateWaiter {
	for looked := 0; ; looked++ {
		if looked > len(tr.ring) {
			tr.newRound(now)
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
		w := u.pop()
		switch {
		case u.pending == 0:
			tr.leaveRing(tr.cur)
		case u.quota == 0:
			tr.cur++
		}
		return w
	}
}

func (tr *tierRound) leaveRing(i int) {
	tr.ring[i].inRing = false
	copy(tr.ring[i:], tr.ring[i+1:])
	tr.ring[len(tr.ring)-1] = nil
	tr.ring = tr.ring[:len(tr.ring)-1]
}

// newRound starts a scheduling round: the ζ control runs (at most once per
// window), then every waiting user gets L_i = φ_i·ζ.
func (tr *tierRound) newRound(now time.Time) {
	tr.ctl.roundEnded(tr, now)
	tr.round++
	for _, u := range tr.ring {
		u.quota, u.round = tr.ctl.quota(u.weight), tr.round
	}
	tr.cur = 0
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
