package commands

import (
	"context"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/router"
	"tierdb/internal/storage"
)

// readPreference reads a read's $readPreference. tierdb extensions: mode
// "adaptive", maxStalenessMS, and the same two as a tag set {tierdb:
// "adaptive", maxStalenessMS: "250"}, which drivers pass through unchanged
// (tierdb: "route" takes the driver's mode with the bound). Other tag sets
// match node names ({node: "node1"}). maxStalenessSeconds has no
// 90-second minimum here.
//
// A read without $readPreference takes the session's (setReadPreference),
// else the user's default (--user-read-preference), else primary. An
// adaptive read without a bound takes its tier's --adaptive-max-staleness.
func (h *Handlers) readPreference(req *Request) (router.Preference, error) {
	doc, err := getDoc(req.Cmd, "$readPreference")
	if err != nil {
		return router.Preference{}, err
	}
	var p router.Preference
	switch {
	case doc != nil:
		if p, err = parsePreference(doc); err != nil {
			return p, err
		}
	case req.Session != nil && req.Session.ReadPreference != nil:
		p = *req.Session.ReadPreference
	default:
		p = h.userReadPreference(req.Session)
	}
	if p.Mode == router.Adaptive && p.MaxStaleness == 0 && h.opts.Replication != nil {
		p.MaxStaleness = h.opts.Replication.AdaptiveBound[req.tier]
	}
	return p, nil
}

// userReadPreference is the authenticated user's configured default.
func (h *Handlers) userReadPreference(s *Session) router.Preference {
	r := h.opts.Replication
	if r == nil || s == nil || s.User == nil {
		return router.Preference{Mode: router.Primary}
	}
	if p, ok := r.UserDefaults[s.User.User.Name.User]; ok {
		return p
	}
	return router.Preference{Mode: router.Primary}
}

// parsePreference reads a read preference document.
func parsePreference(doc bson.D) (router.Preference, error) {
	p := router.Preference{Mode: router.Primary}
	mode, err := getString(doc, "mode", "primary")
	if err != nil {
		return p, err
	}
	if p.Mode, err = router.ParseMode(mode); err != nil {
		return p, mongoerr.New(mongoerr.FailedToParse, err.Error())
	}
	tags, err := getArray(doc, "tags")
	if err != nil {
		return p, err
	}
	tagMS := -1.0
	for _, t := range tags {
		set, ok := t.(bson.D)
		if !ok {
			return p, mongoerr.New(mongoerr.FailedToParse, "read preference tags must be documents")
		}
		m := make(map[string]string, len(set))
		for _, e := range set {
			v, ok := e.Value.(string)
			if !ok {
				return p, mongoerr.New(mongoerr.FailedToParse, "read preference tag values must be strings")
			}
			m[e.Key] = v
		}
		if _, ok := m["tierdb"]; ok {
			if tagMS, err = tierdbTags(m); err != nil {
				return p, err
			}
			if m["tierdb"] == "adaptive" {
				p.Mode = router.Adaptive
			}
			continue
		}
		p.Tags = append(p.Tags, m)
	}
	secs, err := getNumber(doc, "maxStalenessSeconds", -1)
	if err != nil {
		return p, err
	}
	ms, err := getNumber(doc, "maxStalenessMS", tagMS)
	if err != nil {
		return p, err
	}
	switch {
	case ms > 0:
		p.MaxStaleness = time.Duration(ms * float64(time.Millisecond))
	case secs > 0:
		p.MaxStaleness = time.Duration(secs * float64(time.Second))
	case ms == 0 || secs == 0 || ms < -1 || secs < -1:
		return p, mongoerr.New(mongoerr.BadValue, "maxStalenessSeconds and maxStalenessMS must be positive, or -1 for no bound")
	}
	if p.Mode == router.Primary && p.MaxStaleness > 0 {
		return p, mongoerr.New(mongoerr.BadValue, "mode 'primary' does not allow a staleness bound")
	}
	return p, nil
}

// tierdbTags reads the tag set that carries tierdb's read options through
// drivers, which pass tag sets on unchanged but know nothing of tierdb:
// {tierdb: "adaptive" | "route", maxStalenessMS: "250"}.
func tierdbTags(m map[string]string) (float64, error) {
	if v := m["tierdb"]; v != "adaptive" && v != "route" {
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "tag tierdb must be \"adaptive\" or \"route\", got %q", v)
	}
	ms := -1.0
	for k, v := range m {
		switch k {
		case "tierdb":
		case "maxStalenessMS":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, mongoerr.Newf(mongoerr.FailedToParse, "tag maxStalenessMS must be a number, got %q", v)
			}
			ms = n
		default:
			return 0, mongoerr.Newf(mongoerr.FailedToParse, "unknown key %q in the tierdb tag set (allowed: tierdb, maxStalenessMS)", k)
		}
	}
	return ms, nil
}

// routeRead picks the node for a read and returns the request's On with
// that node, and done, to call when the read's work is over: it counts the
// read out of its node and reports its latency to the balancer.
func (h *Handlers) routeRead(req *Request) (storage.On, func(), error) {
	on := req.on
	r := h.opts.Replication
	pref, err := h.readPreference(req)
	if err != nil || r == nil {
		return on, func() {}, err
	}
	nodes := h.store.Nodes()
	switch {
	case len(nodes) < 2 && pref.Mode == router.Secondary:
		return on, nil, mongoerr.New(mongoerr.FailedToSatisfyReadPref, "no standby: tierdb runs without replicas (--replicas)")
	case len(nodes) < 2:
		return on, func() {}, nil
	case pref.Mode == router.Primary:
		// The common case skips the node views; the balancer still hears
		// of the primary's latency.
		on.Node = nodes[0]
		return on, h.readOn(nodes[0], false), nil
	}
	members := r.Monitor.Members()
	now := time.Now()
	views := make([]router.NodeView, len(members))
	for i, m := range members {
		views[i] = router.NodeView{Up: m.Up || m.Primary, Staleness: m.Staleness(now),
			InFlight: r.counters(m.Name).inFlight.Load(), Tags: map[string]string{"node": m.Name}}
	}
	choice, err := r.Router.Route(pref, views[0], views[1:])
	if err != nil {
		return on, nil, mongoerr.Newf(mongoerr.FailedToSatisfyReadPref, "no standby within the read's staleness bound (%s) is up", boundText(pref.MaxStaleness))
	}
	on.Node = members[choice+1].Node()
	return on, h.readOn(on.Node, choice != router.PrimaryNode), nil
}

// readOn counts a read into node n and returns done, which counts it out
// and tells the balancer its latency.
func (h *Handlers) readOn(n *storage.Node, standby bool) func() {
	r := h.opts.Replication
	c := r.counters(n.Name)
	c.inFlight.Add(1)
	c.served.Add(1)
	start := time.Now()
	return func() {
		c.inFlight.Add(-1)
		r.Balancer.Observe(standby, time.Since(start))
	}
}

func boundText(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}

// setReadPreference sets the session's read preference for reads that carry
// none: {setReadPreference: {mode, maxStalenessMS | maxStalenessSeconds,
// tags}}; null goes back to the user's default.
func (h *Handlers) setReadPreference(_ context.Context, req *Request) (bson.D, error) {
	if req.Session == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "no session")
	}
	switch v := req.Cmd[0].Value.(type) {
	case nil:
		req.Session.ReadPreference = nil
	case bson.D:
		p, err := parsePreference(v)
		if err != nil {
			return nil, err
		}
		req.Session.ReadPreference = &p
	default:
		return nil, typeErr("setReadPreference", "object or null", v)
	}
	return bson.D{}, nil
}
