package router

import (
	"errors"
	"math/rand/v2"
	"time"
)

// NodeView is what routing needs to know of a node at the moment of a read.
type NodeView struct {
	Up        bool
	Staleness time.Duration
	InFlight  int64 // reads running on it
	// Tags are matched against a preference's tag sets.
	Tags map[string]string
}

// PrimaryNode is the choice of the primary in Route's result.
const PrimaryNode = -1

// ErrNoEligible means the preference allows no node that is up and fresh
// enough.
var ErrNoEligible = errors.New("no node satisfies the read preference")

// Router chooses nodes for reads.
type Router struct {
	balancer *Balancer
	// margin is added to a standby's staleness before comparing it with a
	// bound: the read runs a moment after the choice.
	margin time.Duration
	rand   func() float64
}

// Options configure a Router.
type Options struct {
	Balancer *Balancer
	// Margin is added to measured staleness before comparing with a bound;
	// default 2ms.
	Margin time.Duration
	// Rand returns a number in [0, 1) for the adaptive coin; default
	// math/rand/v2.Float64.
	Rand func() float64
}

// New makes a Router.
func New(opts Options) *Router {
	if opts.Margin <= 0 {
		opts.Margin = 2 * time.Millisecond
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	return &Router{balancer: opts.Balancer, margin: opts.Margin, rand: opts.Rand}
}

// Route picks the node for a read: PrimaryNode or an index into standbys.
func (r *Router) Route(p Preference, primary NodeView, standbys []NodeView) (int, error) {
	switch p.Mode {
	case Primary:
		return PrimaryNode, nil
	case PrimaryPreferred:
		if primary.Up {
			return PrimaryNode, nil
		}
		return r.standby(p, standbys)
	case Secondary:
		return r.standby(p, standbys)
	case SecondaryPreferred:
		if i, err := r.standby(p, standbys); err == nil {
			return i, nil
		}
		return PrimaryNode, nil
	case Nearest:
		// Nearest by load: every node is on this machine's network, so
		// the one with fewest reads in flight answers soonest. As in
		// MongoDB, the first tag set that matches an eligible node decides,
		// and it applies to the primary too.
		for _, set := range p.tagSets() {
			i := r.leastBusy(set, p.MaxStaleness, standbys)
			primaryOK := primary.Up && matchesSet(set, primary.Tags)
			switch {
			case primaryOK && (i < 0 || primary.InFlight <= standbys[i].InFlight):
				return PrimaryNode, nil
			case i >= 0:
				return i, nil
			}
		}
		return PrimaryNode, ErrNoEligible
	case Adaptive:
		if r.rand() >= r.Fraction(p.MaxStaleness, standbys) {
			return PrimaryNode, nil
		}
		if i, err := r.standby(p, standbys); err == nil {
			return i, nil
		}
		return PrimaryNode, nil
	}
	return PrimaryNode, nil
}

// Fraction is the Balance Fraction for reads with this bound: the
// balancer's, or 0 when the bound is 0 (no stale data accepted) or some
// standby that is up is staler than the bound (Algorithm 1's
// Rcv-ServerStatus). Standbys that are down serve nothing and do not count.
func (r *Router) Fraction(bound time.Duration, standbys []NodeView) float64 {
	if bound <= 0 || r.balancer == nil {
		return 0
	}
	up := 0
	for _, s := range standbys {
		if !s.Up {
			continue
		}
		up++
		if !r.fresh(s, bound) {
			return 0
		}
	}
	if up == 0 {
		return 0
	}
	return r.balancer.Fraction()
}

func (r *Router) fresh(s NodeView, bound time.Duration) bool {
	return bound <= 0 || s.Staleness <= bound-r.margin
}

// standby picks the least busy standby that is up and within the bound (0:
// any staleness) among those matching the first tag set that matches any.
func (r *Router) standby(p Preference, standbys []NodeView) (int, error) {
	for _, set := range p.tagSets() {
		if i := r.leastBusy(set, p.MaxStaleness, standbys); i >= 0 {
			return i, nil
		}
	}
	return PrimaryNode, ErrNoEligible
}

// leastBusy is the eligible standby matching set with the fewest reads in
// flight, or -1.
func (r *Router) leastBusy(set map[string]string, bound time.Duration, standbys []NodeView) int {
	best := -1
	for i, s := range standbys {
		if s.Up && r.fresh(s, bound) && matchesSet(set, s.Tags) && (best < 0 || s.InFlight < standbys[best].InFlight) {
			best = i
		}
	}
	return best
}
