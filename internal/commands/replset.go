package commands

import (
	"context"
	"fmt"
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
	// Members is how many members the set is configured with, primary
	// included: "majority" and w:N count these, not the members that
	// happen to be up, so a write is never acknowledged as replicated
	// while the standbys it needs are missing.
	Members int

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
