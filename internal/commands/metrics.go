package commands

import (
	"sort"
	"time"

	"tierdb/internal/auth"
	"tierdb/internal/metrics"
	"tierdb/internal/qos"
)

// Metrics is the metrics source for the command layer, read at each scrape:
// opcounters, calls and failures per command, cursors, backends, users and
// the priority channel. The latency and wait histograms are observed as
// requests run (observe.go); Register registers both.
func (h *Handlers) Metrics(w *metrics.Writer) {
	names := []string{"insert", "query", "update", "delete", "getmore", "command"}
	for i, n := range names {
		w.Counter("tierdb_opcounters_total", "Operations by type, as serverStatus opcounters.", metrics.Labels{{"type", n}}, float64(h.ops[opCounter(i+1)].Load()))
	}
	seen := map[*command]bool{}
	var cmds []*command
	for _, c := range h.table {
		if !seen[c] {
			seen[c] = true
			cmds = append(cmds, c)
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		if n := c.calls.Load(); n > 0 {
			w.Counter("tierdb_command_calls_total", "Commands run, by command.", metrics.Labels{{"command", c.name}}, float64(n))
			w.Counter("tierdb_command_failures_total", "Commands that returned an error, by command.", metrics.Labels{{"command", c.name}}, float64(c.fails.Load()))
		}
	}
	if h.opts.Connections != nil {
		cur, total := h.opts.Connections()
		w.Gauge("tierdb_connections", "Open client connections.", nil, float64(cur))
		w.Counter("tierdb_connections_total", "Client connections accepted.", nil, float64(total))
	}
	w.Gauge("tierdb_cursors_open", "Open cursors.", nil, float64(h.cursors.len()))
	if m := h.opts.QoS; m != nil {
		h.writeFairMetrics(w, m.Gate.Stats())
	}
	for _, o := range []struct {
		outcome string
		n       int64
	}{{"started", h.txnStats.started.Load()}, {"committed", h.txnStats.committed.Load()}, {"aborted", h.txnStats.aborted.Load()}} {
		w.Counter("tierdb_transactions_total", "Multi-document transactions, by what happened to them.", metrics.Labels{{"outcome", o.outcome}}, float64(o.n))
	}
	w.Counter("tierdb_retried_writes_total", "Retryable writes answered from their record instead of running again.", nil, float64(h.txnStats.retried.Load()))
	deferred, refused := h.store.DeferredWrites()
	w.Counter("tierdb_deferred_writes_total", "Retryable writes whose first statement rode with their commit, in one round trip to PostgreSQL.", nil, float64(deferred))
	w.Counter("tierdb_deferred_writes_refused_total", "Deferred writes that PostgreSQL refused (a duplicate key, a lost compare-and-swap, or any error of the pipeline before them): nothing committed and they ran again the ordinary way.", nil, float64(refused))
	lost, locked := h.store.WriteConflicts()
	w.Counter("tierdb_swaps_lost_total", "Compare-and-swap writes (update, findAndModify, delete) that found the document changed or gone since it was read: by a concurrent write, or from a stale cached version.", nil, float64(lost))
	w.Counter("tierdb_locked_writes_total", "Writes that ran under the document's row lock: after losing their compare-and-swap to a concurrent write, or as updates by _id of a document that lost one within the last second.", nil, float64(locked))
	w.Counter("tierdb_async_commits_total", "Write statements committed without waiting for the WAL flush (j:false).", nil, float64(h.store.AsyncCommits()))
	// Per-user accounting: one label value per user that ran anything
	// (bounded by the number of users, which administrators create).
	for _, u := range h.accounts.list() {
		for t := qos.Tier(0); t < qos.NumTiers; t++ {
			if n := u.ops[t].Load(); n > 0 {
				w.Counter("tierdb_user_operations_total", "Commands run, by user and tier.", metrics.Labels{{"user", u.label()}, {"tier", t.String()}}, float64(n))
			}
		}
		w.Counter("tierdb_user_admission_wait_seconds_total", "Time spent waiting in the priority channel, by user.", metrics.Labels{{"user", u.label()}}, time.Duration(u.waitNanos.Load()).Seconds())
	}
	for _, m := range auth.Mechanisms {
		ms := h.authStats.of(m)
		l := metrics.Labels{{"mechanism", m.String()}}
		w.Counter("tierdb_auth_attempts_total", "Authentications started, by mechanism.", l, float64(ms.received.Load()))
		w.Counter("tierdb_auth_successes_total", "Authentications that succeeded, by mechanism.", l, float64(ms.successful.Load()))
		w.Counter("tierdb_auth_failures_total", "Authentications that failed, by mechanism.", l, float64(ms.failed.Load()))
	}
	w.Gauge("tierdb_auth_required", "1 when every connection must authenticate.", nil, b2f(h.opts.Auth != nil && h.opts.Auth.Required()))
	// Authentication throttling (auth.Throttle); zeros with it off.
	ts := h.throttle().Stats()
	throttle := []struct {
		by                   string
		refused, throttlings int64
	}{{"user", ts.RefusedUser, ts.LockoutsUser}, {"peer", ts.RefusedPeer, ts.LockoutsPeer}}
	for _, t := range throttle {
		w.Counter("tierdb_auth_throttled_total", "Authentications refused without a password check because the user (by=user) or else the client address (by=peer) was throttled after repeated failures.", metrics.Labels{{"by", t.by}}, float64(t.refused))
	}
	for _, t := range throttle {
		w.Counter("tierdb_auth_throttlings_total", "Times a user (by=user) or a client address (by=peer) became throttled after repeated failed authentications.", metrics.Labels{{"by", t.by}}, float64(t.throttlings))
	}
	for t, st := range h.store.PoolStats() {
		l := metrics.Labels{{"tier", qos.Tier(t).String()}}
		w.Gauge("tierdb_backends_in_use", "PostgreSQL backends in use, by tier pool.", l, float64(st[0]))
		w.Gauge("tierdb_backends_open", "PostgreSQL backends open, by tier pool.", l, float64(st[1]))
	}
	h.replMetrics(w)
	if h.opts.QoS == nil {
		w.Gauge("tierdb_qos_enabled", "1 when the priority channel is on.", nil, 0)
		return
	}
	st := h.opts.QoS.Channel.Stats()
	w.Gauge("tierdb_qos_enabled", "1 when the priority channel is on.", nil, 1)
	w.Gauge("tierdb_qos_threshold", "Activation threshold of the priority channel.", nil, float64(st.Threshold))
	w.Gauge("tierdb_qos_anticipation_seconds", "How long lower tiers stay held after the last high-tier request, as configured (0: off).", nil, st.Anticipation.Seconds())
	w.Gauge("tierdb_qos_anticipation_objectives_seconds", "How long the high tier's latency objectives ask the lower tiers to be held after its last request (0: none); the longer of this and the configured one holds.", nil, st.ObjectiveAnticipation.Seconds())
	w.Counter("tierdb_qos_anticipation_periods_total", "Anticipation periods started.", nil, float64(st.Anticipated))
	w.Counter("tierdb_qos_anticipation_expired_total", "Anticipation periods that ended with no high-tier request.", nil, float64(st.AnticipationExpired))
	h.osMetrics(w)
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		ts := st.Tiers[t]
		l := metrics.Labels{{"tier", t.String()}}
		w.Gauge("tierdb_qos_in_process", "Requests in process, by tier.", l, float64(ts.InProcess))
		w.Gauge("tierdb_qos_waiting", "Requests waiting in the priority channel, by tier.", l, float64(ts.Waiting))
		w.Counter("tierdb_qos_admitted_total", "Requests admitted, by tier.", l, float64(ts.Admitted))
		w.Counter("tierdb_qos_waited_total", "Requests that had to wait, by tier.", l, float64(ts.Waited))
		w.Counter("tierdb_qos_cancelled_total", "Requests that left the queue (client gone, maxTimeMS), by tier.", l, float64(ts.Cancelled))
		w.Counter("tierdb_qos_guard_admissions_total", "Requests admitted by the starvation guard, by tier.", l, float64(ts.GuardAdmissions))
	}
}

// osMetrics writes what the tier controller does to the operating system's
// treatment of backends: each tier's time slice, the last look at the host
// that decides the high tier's automatic one, and priority inheritances.
func (h *Handlers) osMetrics(w *metrics.Writer) {
	os := h.opts.QoS.Controller.Status()
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		w.Gauge("tierdb_qos_slice_seconds", "The time slice a tier's backends run with (0: the kernel's default).", metrics.Labels{{"tier", t.String()}}, os.Slices[t].Seconds())
	}
	w.Gauge("tierdb_host_other_cpus", "CPUs that programs other than tierdb and its PostgreSQL servers used on tierdb's CPUs, at the last look (0 while the slice is not automatic).", nil, os.Host.Other)
	w.Gauge("tierdb_host_idle_cpus", "CPUs left idle on tierdb's CPUs at the last look.", nil, os.Host.Idle)
	w.Gauge("tierdb_host_high_wait_seconds", "How long the high tier's backends waited for a CPU per timeslice at the last look.", nil, os.Host.HighWait.Seconds())
	w.Counter("tierdb_qos_inheritances_total", "Times a lower-tier backend took the high tier's priority because a high-tier request waited for it.", nil, float64(os.Boosts))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// writeFairMetrics writes the gate's figures, each family's samples
// together as the exposition format wants.
func (h *Handlers) writeFairMetrics(w *metrics.Writer, st qos.GateStats) {
	w.Gauge("tierdb_fair_parallelism", "P: the most requests of all tiers in PostgreSQL at once (0: no limit).", nil, float64(st.Parallelism))
	w.Gauge("tierdb_fair_parallelism_while_shared", "1: P holds only while two or more users have requests (it buys no throughput, only fairness); 0: always.", nil, b2f(st.WhileShared))
	perTier := []struct {
		name, help string
		value      func(qos.FairStats) float64
	}{
		{"tierdb_fair_waiting", "Requests waiting at the fair-share gate, by tier.", func(f qos.FairStats) float64 { return float64(f.Waiting) }},
		{"tierdb_fair_zeta", "Round quota per unit of weight, by tier.", func(f qos.FairStats) float64 { return f.Zeta }},
		{"tierdb_fair_unfairness", "U_f over the last window with at least two waiting users, by tier.", func(f qos.FairStats) float64 { return f.Unfairness }},
		{"tierdb_fair_latency_cv", "Latency coefficient of variation averaged over users, last window, by tier.", func(f qos.FairStats) float64 { return f.CV }},
		{"tierdb_fair_unfairness_long", "U_f over the last second with enough admissions to measure, which sets the rounds' anticipation, by tier.", func(f qos.FairStats) float64 { return f.UnfairnessLong }},
		{"tierdb_fair_anticipation_seconds", "How long a scheduling round may hold free slots for a user whose next request is on its way (fixed, or found by the control), by tier.", func(f qos.FairStats) float64 { return f.Anticipation.Seconds() }},
	}
	for _, m := range perTier {
		for t := qos.Normal; t < qos.NumTiers; t++ {
			w.Gauge(m.name, m.help, metrics.Labels{{"tier", t.String()}}, m.value(st.Tiers[t]))
		}
	}
	perUser := []struct {
		name, help string
		value      func(qos.UserStats) float64
	}{
		{"tierdb_fair_user_waiting", "Requests of a user waiting at the fair-share gate.", func(u qos.UserStats) float64 { return float64(u.Waiting) }},
		{"tierdb_fair_user_weight", "A user's fair-share weight.", func(u qos.UserStats) float64 { return u.Weight }},
		{"tierdb_fair_user_wait_seconds", "Mean wait at the fair-share gate of a user's requests admitted in the current window.", func(u qos.UserStats) float64 { return u.MeanWait.Seconds() }},
	}
	// A user's objective at the high tier and at the lower tiers are
	// judged apart (qos.SLOStats.High), hence the tiers label.
	slos := h.opts.QoS.Gate.SLOs()
	perSLO := []struct {
		name, help string
		value      func(qos.SLOStats) float64
	}{
		{"tierdb_slo_objective_seconds", "A user's p99.9 latency objective.", func(s qos.SLOStats) float64 { return s.Objective.Seconds() }},
		{"tierdb_slo_p999_seconds", "A user's p99.9 latency over the SLO controller's window (its recent periods).", func(s qos.SLOStats) float64 { return s.P999.Seconds() }},
		{"tierdb_slo_met", "1 when a user's p99.9 met its objective over the last SLO period.", func(s qos.SLOStats) float64 { return b2f(s.Met) }},
		{"tierdb_slo_unmeetable", "1 when the controller judges the objective cannot be met: it steers as far as it can and the p99.9 still misses.", func(s qos.SLOStats) float64 { return b2f(s.Unmeetable) }},
		{"tierdb_slo_urgent_after_seconds", "How long a latency-sensitive user's requests wait in the round before they go ahead of it.", func(s qos.SLOStats) float64 { return s.UrgentAfter.Seconds() }},
		{"tierdb_slo_ahead", "Requests of a latency-sensitive user admitted ahead of the round in the last SLO period.", func(s qos.SLOStats) float64 { return float64(s.Ahead) }},
	}
	for _, m := range perSLO {
		for _, s := range slos {
			tiers := "lower"
			if s.High {
				tiers = "high"
			}
			w.Gauge(m.name, m.help, metrics.Labels{{"user", s.User}, {"tiers", tiers}}, m.value(s))
		}
	}
	for _, m := range perUser {
		for t := qos.Normal; t < qos.NumTiers; t++ {
			for _, u := range st.Tiers[t].Users {
				w.Gauge(m.name, m.help, metrics.Labels{{"tier", t.String()}, {"user", u.User}}, m.value(u))
			}
		}
	}
}
