package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/metrics"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/repl"
	"tierdb/internal/router"
	"tierdb/internal/storage"
)

// Replication is what the command layer needs of the primary and its
// standbys: staleness and write positions (Monitor), the choice of node for
// a read (Router, Balancer) and failover.
type Replication struct {
	// SetName is reported by hello and replSetGetStatus.
	SetName  string
	Monitor  *repl.Monitor
	Router   *router.Router
	Balancer *router.Balancer
	// Failover makes the standby named target (empty: the most caught-up)
	// the primary, waiting up to catchUp for it to replay every write.
	Failover func(ctx context.Context, target string, catchUp time.Duration) error
	// AdaptiveBound is the staleness bound of adaptive reads that give
	// none, per tier.
	AdaptiveBound [qos.NumTiers]time.Duration
	// UserDefaults are read preferences by user name, for reads that carry
	// none and sessions that set none.
	UserDefaults map[string]router.Preference
	// WriteConcernTimeout caps the wait for replication of a write that
	// gives no wtimeout, so that an unsatisfiable write concern ends in a
	// writeConcernError instead of a hang.
	WriteConcernTimeout time.Duration

	nodes sync.Map // node name → *nodeCounters
}

// nodeCounters count the reads of one node.
type nodeCounters struct {
	inFlight atomic.Int64
	served   atomic.Int64
}

func (r *Replication) counters(name string) *nodeCounters {
	if c, ok := r.nodes.Load(name); ok {
		return c.(*nodeCounters)
	}
	c, _ := r.nodes.LoadOrStore(name, new(nodeCounters))
	return c.(*nodeCounters)
}

// replCommands are the replication commands of the table.
func (h *Handlers) replCommands() map[string]*command {
	return map[string]*command{
		"replSetGetStatus":  {handler: h.replSetGetStatus, help: "members, their state, WAL positions, staleness; the read balancer", internal: true},
		"setReadPreference": {handler: h.setReadPreference, help: "set this connection's default read preference, e.g. {mode: \"adaptive\", maxStalenessMS: 250}; null resets", internal: true},
		"replSetStepDown":   {handler: h.replSetStepDown, help: "promote a standby (to: \"nodeN\", default the most caught-up) and make it the primary", internal: true},
	}
}

// withWriteConcern wraps the write commands: the write concern is checked
// before the write and, for w > 1, waited for after it.
func (h *Handlers) withWriteConcern(t map[string]*command) {
	for _, name := range []string{"insert", "update", "delete", "findAndModify", "create", "drop", "dropDatabase", "createIndexes", "dropIndexes"} {
		c := t[name]
		next := c.handler
		c.handler = func(ctx context.Context, req *Request) (bson.D, error) {
			wc, err := h.parseWriteConcern(req.Cmd)
			if err != nil {
				return nil, err
			}
			reply, err := next(ctx, req)
			if err != nil || wc.standbys == 0 {
				return reply, err
			}
			if werr := h.awaitWriteConcern(ctx, wc); werr != nil {
				reply = append(reply, bson.E{Key: "writeConcernError", Value: werr})
			}
			return reply, nil
		}
	}
}

// writeConcern is a parsed write concern: how many standbys must have
// applied the write besides the primary, and for how long to wait.
type writeConcern struct {
	standbys int
	timeout  time.Duration
	spec     bson.D
}

func (h *Handlers) parseWriteConcern(cmd bson.D) (writeConcern, error) {
	spec, err := getDoc(cmd, "writeConcern")
	if err != nil || spec == nil {
		return writeConcern{}, err
	}
	members := len(h.store.Nodes())
	var wc writeConcern
	wc.spec = spec
	if _, err := getBool(spec, "j", false); err != nil {
		return wc, err
	}
	if _, err := getBool(spec, "fsync", false); err != nil {
		return wc, err
	}
	ms, err := getInt(spec, "wtimeout", 0)
	if err != nil {
		return wc, err
	}
	if ms < 0 {
		return wc, mongoerr.New(mongoerr.FailedToParse, "wtimeout must be non-negative")
	}
	wc.timeout = time.Duration(ms) * time.Millisecond
	w, ok := lookup(spec, "w")
	if !ok {
		return wc, nil
	}
	switch v := w.(type) {
	case string:
		if v != "majority" {
			return wc, mongoerr.Newf(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", v)
		}
		wc.standbys = members/2 + 1 - 1
	default:
		n, ok := asInt(v)
		if !ok || n < 0 {
			return wc, mongoerr.Newf(mongoerr.FailedToParse, "w has to be a non-negative number, \"majority\" or a tag set name, not %v", v)
		}
		if n > int64(members) {
			return wc, mongoerr.Newf(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes: w:%d asked, %d members", n, members)
		}
		wc.standbys = int(max(n-1, 0))
	}
	return wc, nil
}

// awaitWriteConcern waits until enough standbys have applied everything the
// primary had written when the write ended; it returns the
// writeConcernError document when they do not in time.
func (h *Handlers) awaitWriteConcern(ctx context.Context, wc writeConcern) bson.D {
	r := h.opts.Replication
	timeout := wc.timeout
	if timeout == 0 && r != nil {
		timeout = r.WriteConcernTimeout
	}
	if timeout == 0 {
		timeout = time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if r == nil {
		err = errors.New("no replication")
	} else {
		var pos storage.WALPosition
		pos, err = h.store.Position(wctx, h.store.Nodes()[0])
		if err == nil {
			err = r.Monitor.AwaitApplied(wctx, pos.Applied, wc.standbys)
		}
	}
	if err == nil {
		return nil
	}
	h.log.Debug("write concern not satisfied", "standbys", wc.standbys, "timeout", timeout, "err", err)
	return bson.D{
		{Key: "code", Value: int32(mongoerr.WriteConcernFailed)},
		{Key: "codeName", Value: mongoerr.WriteConcernFailed.Name()},
		{Key: "errmsg", Value: fmt.Sprintf("waiting for replication timed out after %s: fewer than %d standbys applied the write", timeout, wc.standbys)},
		{Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}, {Key: "writeConcern", Value: wc.spec}}},
	}
}

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

// getNumber reads a number of any BSON numeric type.
func getNumber(d bson.D, key string, def float64) (float64, error) {
	v, ok := lookup(d, key)
	if !ok {
		return def, nil
	}
	switch n := v.(type) {
	case int32:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case float64:
		return n, nil
	}
	return 0, typeErr(key, "number", v)
}

// routeRead picks the node for a read and returns the context that runs it
// there, and done, to call when the read's work is over: it counts the read
// out of its node and reports its latency to the balancer.
func (h *Handlers) routeRead(ctx context.Context, req *Request) (context.Context, func(), error) {
	r := h.opts.Replication
	pref, err := h.readPreference(req)
	if err != nil || r == nil {
		return ctx, func() {}, err
	}
	nodes := h.store.Nodes()
	switch {
	case len(nodes) < 2 && pref.Mode == router.Secondary:
		return ctx, nil, mongoerr.New(mongoerr.FailedToSatisfyReadPref, "no standby: tierdb runs without replicas (--replicas)")
	case len(nodes) < 2:
		return ctx, func() {}, nil
	case pref.Mode == router.Primary:
		// The common case skips the node views; the balancer still hears
		// of the primary's latency.
		ctx, done := h.readOn(ctx, nodes[0], false)
		return ctx, done, nil
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
		return ctx, nil, mongoerr.Newf(mongoerr.FailedToSatisfyReadPref, "no standby within the read's staleness bound (%s) is up", boundText(pref.MaxStaleness))
	}
	ctx, done := h.readOn(ctx, members[choice+1].Node(), choice != router.PrimaryNode)
	return ctx, done, nil
}

// readOn counts a read into node n and returns its context and done, which
// counts it out and tells the balancer its latency.
func (h *Handlers) readOn(ctx context.Context, n *storage.Node, standby bool) (context.Context, func()) {
	r := h.opts.Replication
	c := r.counters(n.Name)
	c.inFlight.Add(1)
	c.served.Add(1)
	start := time.Now()
	return storage.OnNode(ctx, n), func() {
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

func (h *Handlers) replSetGetStatus(_ context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "replSetGetStatus may only be run against the admin database.")
	}
	r := h.opts.Replication
	if r == nil || len(h.store.Nodes()) < 2 {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replicas or --standby-urls")
	}
	now := time.Now()
	var members bson.A
	for i, m := range r.Monitor.Members() {
		state, stateStr := int32(2), "SECONDARY"
		switch {
		case m.Primary:
			state, stateStr = 1, "PRIMARY"
		case !m.Up:
			state, stateStr = 8, "(not reachable/healthy)"
		}
		health := 0.0
		if m.Up {
			health = 1
		}
		staleness := m.Staleness(now)
		stalenessMS := any(nil)
		if staleness != repl.Unbounded {
			stalenessMS = staleness.Milliseconds()
		}
		members = append(members, bson.D{
			{Key: "_id", Value: int32(i)},
			{Key: "name", Value: m.Name},
			{Key: "health", Value: health},
			{Key: "state", Value: state},
			{Key: "stateStr", Value: stateStr},
			{Key: "optime", Value: bson.D{{Key: "ts", Value: optimeTS(m.FreshAsOf)}, {Key: "t", Value: int64(1)}}},
			{Key: "optimeDate", Value: bson.NewDateTimeFromTime(m.FreshAsOf)},
			{Key: "lastHeartbeat", Value: bson.NewDateTimeFromTime(m.LastPoll)},
			{Key: "pingMs", Value: m.RTT.Milliseconds()},
			{Key: "appliedLSN", Value: lsnText(m.Applied)},
			{Key: "receivedLSN", Value: lsnText(m.Received)},
			{Key: "stalenessMillis", Value: stalenessMS},
			{Key: "tags", Value: bson.D{{Key: "node", Value: m.Name}}},
			{Key: "readsServed", Value: r.counters(m.Name).served.Load()},
		})
	}
	return bson.D{
		{Key: "set", Value: r.SetName},
		{Key: "date", Value: bson.NewDateTimeFromTime(now)},
		{Key: "myState", Value: int32(1)},
		{Key: "members", Value: members},
		{Key: "readBalancer", Value: h.balancerStatus()},
	}, nil
}

// balancerStatus reports the Balance Fraction, the last latency ratio and
// the recent period decisions.
func (h *Handlers) balancerStatus() bson.D {
	b := h.opts.Replication.Balancer
	st := b.Status()
	var decisions bson.A
	for _, d := range st.Decisions {
		decisions = append(decisions, bson.D{
			{Key: "at", Value: bson.NewDateTimeFromTime(d.At)},
			{Key: "ratio", Value: d.Ratio},
			{Key: "fraction", Value: d.Fraction},
			{Key: "reason", Value: d.Reason},
		})
	}
	return bson.D{
		{Key: "fraction", Value: st.Fraction},
		{Key: "lastRatio", Value: st.LastRatio},
		{Key: "periodMillis", Value: b.Config().Period.Milliseconds()},
		{Key: "decisions", Value: decisions},
	}
}

func optimeTS(t time.Time) bson.Timestamp {
	if t.IsZero() {
		return bson.Timestamp{}
	}
	return bson.Timestamp{T: uint32(t.Unix()), I: uint32(t.Nanosecond() / 1000)}
}

// lsnText writes a WAL position as PostgreSQL does (X/Y).
func lsnText(lsn uint64) string { return fmt.Sprintf("%X/%X", lsn>>32, uint32(lsn)) }

func (h *Handlers) replSetStepDown(ctx context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "replSetStepDown may only be run against the admin database.")
	}
	r := h.opts.Replication
	if r == nil || r.Failover == nil || len(h.store.Nodes()) < 2 {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "failover needs the embedded replicas of --replicas")
	}
	catchUp, err := getInt(req.Cmd, "secondaryCatchUpPeriodSecs", 10)
	if err != nil {
		return nil, err
	}
	if catchUp < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "secondaryCatchUpPeriodSecs must be non-negative")
	}
	target, err := getString(req.Cmd, "to", "")
	if err != nil {
		return nil, err
	}
	if err := r.Failover(ctx, strings.TrimSpace(target), time.Duration(catchUp)*time.Second); err != nil {
		return nil, err
	}
	return bson.D{}, nil
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

// replStatus is serverStatus's repl section: MongoDB's fields plus each
// standby's staleness and the read balancer.
func (h *Handlers) replStatus() bson.D {
	r := h.opts.Replication
	if r == nil {
		return bson.D{}
	}
	now := time.Now()
	members := r.Monitor.Members()
	hosts := bson.A{}
	var standbys bson.A
	for _, m := range members {
		hosts = append(hosts, m.Name)
		if m.Primary {
			continue
		}
		st := m.Staleness(now)
		var ms any
		if st != repl.Unbounded {
			ms = st.Milliseconds()
		}
		standbys = append(standbys, bson.D{
			{Key: "name", Value: m.Name},
			{Key: "up", Value: m.Up},
			{Key: "stalenessMillis", Value: ms},
			{Key: "lagBytes", Value: int64(members[0].Applied - min(m.Applied, members[0].Applied))},
			{Key: "readsServed", Value: r.counters(m.Name).served.Load()},
		})
	}
	return bson.D{
		{Key: "setName", Value: r.SetName},
		{Key: "ismaster", Value: true},
		{Key: "secondary", Value: false},
		{Key: "hosts", Value: hosts},
		{Key: "primary", Value: members[0].Name},
		{Key: "standbys", Value: standbys},
		{Key: "readBalancer", Value: h.balancerStatus()},
	}
}

// replMetrics exports staleness, lag, reads per node and the balancer.
func (h *Handlers) replMetrics(w *metrics.Writer) {
	r := h.opts.Replication
	if r == nil {
		return
	}
	now := time.Now()
	members := r.Monitor.Members()
	for _, m := range members {
		l := metrics.Labels{{"node", m.Name}}
		w.Counter("tierdb_repl_reads_total", "Reads routed, by node.", l, float64(r.counters(m.Name).served.Load()))
		w.Gauge("tierdb_repl_reads_in_flight", "Reads running, by node.", l, float64(r.counters(m.Name).inFlight.Load()))
		if m.Primary {
			continue
		}
		w.Gauge("tierdb_repl_up", "1 when the standby answered its last poll.", l, b2f(m.Up))
		if st := m.Staleness(now); st != repl.Unbounded {
			w.Gauge("tierdb_repl_staleness_seconds", "Conservative staleness of a standby: how old its view may be.", l, st.Seconds())
		}
		w.Gauge("tierdb_repl_lag_bytes", "WAL the primary has written that the standby has not replayed.", l, float64(members[0].Applied-min(m.Applied, members[0].Applied)))
	}
	st := r.Balancer.Status()
	w.Gauge("tierdb_read_balance_fraction", "Share of adaptive reads sent to standbys (before staleness gating).", nil, st.Fraction)
	w.Gauge("tierdb_read_balance_latency_ratio", "Last period's primary/standby server-side read latency ratio (0: no data).", nil, st.LastRatio)
	for _, reason := range []string{"raise", "lower", "explore", "hold", "no data"} {
		w.Counter("tierdb_read_balance_decisions_total", "Read balancer period decisions, by kind.", metrics.Labels{{"decision", reason}}, float64(st.Counts[reason]))
	}
}
