package commands

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tierdb/internal/metrics"
	"tierdb/internal/qos"
	"tierdb/internal/status"
	"tierdb/internal/storage"
)

// instruments are the command layer's histograms. Dispatch observes every
// request once, in finish; waits by design (the awaitable hello of drivers'
// monitors) go to their own histogram, never to the latency ones, so that
// a few ten-second long-polls cannot make a tier look slow.
type instruments struct {
	// request is the duration of requests by tier, admission wait
	// included; command the same by command and tier.
	request [qos.NumTiers]prometheus.Observer
	command *prometheus.HistogramVec
	// longPoll is the duration of waits by design, by command.
	longPoll *prometheus.HistogramVec
	// qosWait and fairWait are the waits for admission: the priority
	// channel's, then the fair-share gate's, of every admitted request.
	qosWait, fairWait [qos.NumTiers]prometheus.Observer
	// writeConcernWait is the wait for standbys after a write (w > 1).
	writeConcernWait prometheus.Histogram
	slow             *prometheus.CounterVec
	collectors       []prometheus.Collector
}

func newInstruments() *instruments {
	in := &instruments{}
	request := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierdb_request_duration_seconds",
		Help:    "Request duration by tier, admission wait included; awaitable hello long-polls are not in it (tierdb_long_poll_duration_seconds).",
		Buckets: metrics.LatencyBuckets(),
	}, []string{"tier"})
	in.command = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierdb_command_duration_seconds",
		Help:    "Request duration by command (canonical name from the command table) and tier, admission wait included, long-polls excluded.",
		Buckets: metrics.LatencyBuckets(),
	}, []string{"command", "tier"})
	in.longPoll = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierdb_long_poll_duration_seconds",
		Help:    "Duration of waits by design (awaitable hello of drivers' monitors), by command.",
		Buckets: metrics.WaitBuckets(),
	}, []string{"command"})
	qosWait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierdb_qos_wait_seconds",
		Help:    "Wait in the priority channel before admission, every admitted request (0 for those admitted at once), by tier.",
		Buckets: append([]float64{0}, metrics.LatencyBuckets()...),
	}, []string{"tier"})
	fairWait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierdb_fair_wait_seconds",
		Help:    "Wait at the fair-share gate after the priority channel, every admitted request, by tier.",
		Buckets: append([]float64{0}, metrics.LatencyBuckets()...),
	}, []string{"tier"})
	in.writeConcernWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tierdb_write_concern_wait_seconds",
		Help:    "Wait for standbys to apply a write (w > 1 or majority with replicas), after the write itself; part of the request duration.",
		Buckets: metrics.LatencyBuckets(),
	})
	in.slow = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tierdb_slow_operations_total",
		Help: "Operations over the --slow-ms threshold, by tier.",
	}, []string{"tier"})
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		in.request[t] = request.WithLabelValues(t.String())
		in.qosWait[t] = qosWait.WithLabelValues(t.String())
		in.fairWait[t] = fairWait.WithLabelValues(t.String())
		in.slow.WithLabelValues(t.String())
	}
	in.longPoll.WithLabelValues("hello") // the one waiting command: exported from the start
	in.collectors = []prometheus.Collector{request, in.command, in.longPoll, qosWait, fairWait, in.writeConcernWait, in.slow}
	return in
}

// Register registers the command layer's metrics on reg: its histograms
// and the figures Metrics writes at each scrape.
func (h *Handlers) Register(reg prometheus.Registerer) error {
	for _, c := range append(h.instr.collectors, metrics.Collector(h.Metrics)) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// opNote is what a handler tells Dispatch about the operation for the slow
// log: the plan summary of its read.
type opNote struct {
	mu   sync.Mutex
	plan string
}

type opNoteKey struct{}

// noteOp gives the request a note for its plan summary when the slow log
// is on (nil otherwise: nothing is noted, nothing allocated).
func (h *Handlers) noteOp(ctx context.Context) (context.Context, *opNote) {
	if h.opts.SlowThreshold <= 0 {
		return ctx, nil
	}
	n := &opNote{}
	return context.WithValue(ctx, opNoteKey{}, n), n
}

// notePlan records how a read of col runs, in MongoDB's planSummary style:
// COLLSCAN, IXSCAN over the key columns the filter was pushed to, SORT for
// an in-memory sort, and the node when a standby serves it. Field names
// only, never values.
func notePlan(ctx context.Context, on storage.On, col *storage.Collection, rs *readSpec, p storage.ScanParams, memSort bool) {
	n, _ := ctx.Value(opNoteKey{}).(*opNote)
	if n == nil {
		return
	}
	var b strings.Builder
	switch {
	case p.Order != nil:
		for _, ix := range col.Indexes {
			if ix.Column == p.Order.Column {
				var fields []string
				for _, k := range ix.Keys {
					fields = append(fields, k.Field)
				}
				b.WriteString("IXSCAN {" + strings.Join(fields, ", ") + "} (sort)")
			}
		}
	case rs.exact:
		b.WriteString("IDHACK")
	case p.Where == "" || p.Where == "TRUE":
		b.WriteString("COLLSCAN")
	default:
		var used []string
		for _, kc := range col.KeyColumns() {
			if strings.Contains(p.Where, kc.Column) {
				used = append(used, "{"+strings.Join(kc.Fields, ", ")+"}")
			}
		}
		if len(used) == 0 {
			used = []string{"?"}
		}
		b.WriteString("IXSCAN " + strings.Join(used, " "))
	}
	if memSort {
		b.WriteString(", SORT")
	}
	if node := on.Node; node != nil && !node.Primary {
		b.WriteString(", on " + node.Name)
	}
	n.mu.Lock()
	if n.plan == "" {
		n.plan = b.String()
	} else if !strings.Contains(n.plan, b.String()) {
		n.plan += "; " + b.String()
	}
	n.mu.Unlock()
}

// isLongPoll reports a wait by design: an awaitable hello (the server
// discovery spec's streaming monitor sends topologyVersion and
// maxAwaitTimeMS, and is answered only when the time is up).
func isLongPoll(req *Request) bool {
	if req.cmd == nil || req.cmd.name != "hello" {
		return false
	}
	_, hasTV := lookup(req.Cmd, "topologyVersion")
	ms, err := getInt(req.Cmd, "maxAwaitTimeMS", 0)
	return hasTV && err == nil && ms > 0
}

// finish records a request that took d: the latency histograms (or the
// long-poll one) and, past the threshold, the slow log.
func (h *Handlers) finish(req *Request, d time.Duration, note *opNote, err error) {
	tier := req.tier
	if tier >= qos.NumTiers {
		tier = qos.Normal
	}
	if isLongPoll(req) {
		h.instr.longPoll.WithLabelValues(req.cmd.name).Observe(d.Seconds())
		return
	}
	h.instr.request[tier].Observe(d.Seconds())
	if req.cmd != nil {
		h.instr.command.WithLabelValues(req.cmd.name, tier.String()).Observe(d.Seconds())
	}
	if h.opts.SlowThreshold <= 0 || d < h.opts.SlowThreshold || req.cmd == nil {
		return
	}
	op := status.SlowOp{
		Time:       time.Now(),
		User:       logUser(req.Session),
		Tier:       tier.String(),
		Command:    req.cmd.name,
		DB:         req.DB,
		Collection: commandCollection(req),
		DurationMs: float64(d.Microseconds()) / 1000,
	}
	if req.cmd.access.kind != accessCollection {
		op.Collection = ""
	}
	if req.Session != nil {
		op.Client = req.Session.RemoteAddr
	}
	if note != nil {
		note.mu.Lock()
		op.Plan = note.plan
		note.mu.Unlock()
	}
	attrs := []any{"user", op.User, "client", op.Client, "tier", op.Tier, "command", op.Command, "db", op.DB}
	if op.Collection != "" {
		attrs = append(attrs, "collection", op.Collection)
	}
	attrs = append(attrs, "duration_ms", op.DurationMs)
	if op.Plan != "" {
		attrs = append(attrs, "plan_summary", op.Plan)
	}
	if err != nil {
		e, _ := Map(err)
		op.ErrorCode = int32(e.Code)
		attrs = append(attrs, "error_code", op.ErrorCode)
	}
	h.instr.slow.WithLabelValues(op.Tier).Inc()
	h.slow.Add(op)
	h.log.Info("slow operation", attrs...)
}

// logUser names the session's user for logs and the status page.
func logUser(s *Session) string {
	if u := sessionUser(s); u != "" {
		return u
	}
	return "(unauthenticated)"
}

// Ready reports whether requests can be served: no failover under way, the
// primary known and answering.
func (h *Handlers) Ready(ctx context.Context) error {
	if h.store == nil {
		return fmt.Errorf("no storage")
	}
	return h.store.Ready(ctx)
}
