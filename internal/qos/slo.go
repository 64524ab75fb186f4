package qos

import (
	"slices"
	"time"
)

// SLO mode (seed 004 §5.3, after PSLO): a user may carry a p99.9 latency
// objective. Every period the controller compares each such user's p99.9
// over its recent requests with the objective and scales the user's weight:
// doubled while the objective is missed, cut by a fifth while the p99.9 is
// under half of it, so latency-sensitive users get the least share that
// meets their objective and best-effort users the rest. A user whose weight
// is at the top of its range and still misses is reported as unmeetable.
//
// Weights only decide who goes first when requests wait for a slot: with
// no parallelism limit (P = 0) nothing waits and no objective can be
// enforced this way; the controller then reports the misses as they are.

const (
	sloSamples  = 4096 // latencies kept per user: enough for a p99.9
	sloMinScale = 1.0 / 16
	sloMaxScale = 64
)

// sloState is one user's objective and the controller's view of it.
type sloState struct {
	objective time.Duration
	scale     float64 // multiplies the user's weight
	lat       []time.Duration
	next      int
	p999      time.Duration
	// met: the last p99.9 was within the objective; unmeetable: it was
	// missed with the scale at its top.
	met, unmeetable bool
}

func (s *sloState) add(d time.Duration) {
	if len(s.lat) < sloSamples {
		s.lat = append(s.lat, d)
		return
	}
	s.lat[s.next] = d
	s.next = (s.next + 1) % sloSamples
}

// adjust is one step of the feedback control.
func (s *sloState) adjust() {
	if len(s.lat) == 0 {
		return
	}
	sorted := slices.Clone(s.lat)
	slices.Sort(sorted)
	s.p999 = sorted[min(len(sorted)-1, len(sorted)*999/1000)]
	s.met = s.p999 <= s.objective
	s.unmeetable = false
	switch {
	case !s.met && s.scale >= sloMaxScale:
		s.unmeetable = true
	case !s.met:
		s.scale = min(sloMaxScale, s.scale*2)
	case s.p999 < s.objective/2:
		s.scale = max(sloMinScale, s.scale*0.8)
	}
	s.lat, s.next = s.lat[:0], 0
}

// SLOStats is one objective as the controller sees it.
type SLOStats struct {
	User       string
	Objective  time.Duration
	P999       time.Duration // over the last period with requests
	Scale      float64       // the user's weight is multiplied by it
	Met        bool
	Unmeetable bool
}
