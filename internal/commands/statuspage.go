package commands

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"tierdb/internal/buildinfo"
	"tierdb/internal/qos"
	"tierdb/internal/repl"
	"tierdb/internal/status"
)

// StatusSnapshot takes the figures of the status page (internal/status):
// cumulative counts, which the page's server turns into rates.
func (h *Handlers) StatusSnapshot() *status.Snapshot {
	now := time.Now()
	b := buildinfo.Read()
	s := &status.Snapshot{
		Time: now, Version: b.Version, Commit: b.ShortCommit(),
		UptimeSeconds: now.Sub(h.started).Seconds(),
		SlowMS:        h.opts.SlowThreshold.Milliseconds(),
		Users:         []status.User{}, Replicas: []status.Replica{}, SlowOps: h.slow.Recent(),
	}
	if h.opts.Connections != nil {
		s.Connections, _ = h.opts.Connections()
	}
	accounts := h.accounts.list()
	m := h.opts.QoS
	var ch qos.ChannelStats
	var gate qos.GateStats
	var cfg qos.Config
	var backends [qos.NumTiers][]int
	if m != nil {
		s.QoS = true
		ch, gate, cfg = m.Channel.Stats(), m.Gate.Stats(), m.Config()
		s.Threshold, s.Parallelism = ch.Threshold, gate.Parallelism
		backends = m.Controller.Status().Backends
	} else if h.store != nil {
		for t := range backends {
			backends[t] = h.store.BackendPIDs(qos.Tier(t))
		}
	}
	var pools [qos.NumTiers][2]int32
	if h.store != nil {
		pools = h.store.PoolStats()
	}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		ts := status.Tier{Name: t.String(), BackendsInUse: int(pools[t][0]), BackendsOpen: int(pools[t][1]), Backends: []status.Backend{}}
		var hm dto.Metric
		if err := h.instr.request[t].(prometheus.Metric).Write(&hm); err == nil {
			ts.Requests, ts.LatencySeconds = hm.GetHistogram().GetSampleCount(), hm.GetHistogram().GetSampleSum()
		}
		if m != nil {
			c := ch.Tiers[t]
			ts.InProcess, ts.Waiting, ts.Admitted = c.InProcess, c.Waiting, c.Admitted
			ts.WaitP50Ms, ts.WaitP99Ms, ts.WaitMaxMs = ms(c.WaitP50), ms(c.WaitP99), ms(c.WaitMax)
			nice := cfg.Nice[t]
			ts.Nice, ts.IOPriority = &nice, cfg.IO.Tiers[t].String()
		} else {
			for _, u := range accounts {
				ts.Admitted += uint64(u.ops[t].Load())
			}
		}
		pids := append([]int(nil), backends[t]...)
		sort.Ints(pids)
		for _, pid := range pids {
			ts.Backends = append(ts.Backends, status.Backend{PID: pid, Nice: readNice(pid)})
		}
		s.Tiers = append(s.Tiers, ts)
	}
	s.Users = h.statusUsers(accounts, gate, m != nil)
	h.statusReplicas(s, now)
	return s
}

// statusUsers is a row per user and tier it ran work at: its operations
// from the accounts, its weight and queue from the fair-share gate, its
// latency objective. Unauthenticated clients are one account; the gate
// counts them per peer host ("peer 10.0.0.1"), so their rows add those up.
func (h *Handlers) statusUsers(accounts []*userAccount, gate qos.GateStats, qosOn bool) []status.User {
	// A user's high-tier requests have an objective state of their own.
	type sloOf struct {
		user string
		high bool
	}
	slos := map[sloOf]qos.SLOStats{}
	if qosOn {
		for _, s := range h.opts.QoS.Gate.SLOs() {
			slos[sloOf{s.User, s.High}] = s
		}
	}
	out := []status.User{}
	for _, a := range accounts {
		for t := qos.Tier(0); t < qos.NumTiers; t++ {
			n := a.ops[t].Load()
			if n == 0 {
				continue
			}
			u := status.User{Name: a.label(), Tier: t.String(), Ops: uint64(n), Weight: 1}
			inGate := false
			if qosOn && t >= qos.Normal {
				for _, f := range gate.Tiers[t].Users {
					if f.User == a.name || (a.name == "" && strings.HasPrefix(f.User, "peer ")) {
						inGate = true
						u.Weight, u.Waiting, u.InProcess = f.Weight, u.Waiting+f.Waiting, u.InProcess+f.InProcess
					}
				}
			}
			// Not in the gate's current window: the weight it would get.
			if !inGate && a.name != "" && h.opts.Auth != nil {
				if pr := h.opts.Auth.Lookup(a.user); pr != nil {
					u.Weight = userWeight(pr.User)
				}
			}
			if s, ok := slos[sloOf{a.name, t == qos.High}]; ok && a.name != "" {
				u.SLO = "met"
				switch {
				case s.Unmeetable:
					u.SLO = "cannot be met"
				case !s.Met:
					u.SLO = "missed"
				}
				u.P999Ms, u.ObjectiveMs = ms(s.P999), ms(s.Objective)
			}
			out = append(out, u)
		}
	}
	return out
}

func (h *Handlers) statusReplicas(s *status.Snapshot, now time.Time) {
	r := h.opts.Replication
	if r == nil || r.Monitor == nil {
		return
	}
	members := r.Monitor.Members()
	for _, m := range members {
		rp := status.Replica{Name: m.Name, Role: "standby", Up: m.Up, ReadsServed: r.counters(m.Name).served.Load()}
		switch {
		case m.Primary:
			rp.Role = "primary"
		case !m.Up:
			rp.Role = "down"
		}
		if !m.Primary && len(members) > 0 {
			rp.LagBytes = members[0].Applied - min(m.Applied, members[0].Applied)
			if st := m.Staleness(now); st != repl.Unbounded {
				v := ms(st)
				rp.StalenessMs = &v
			}
		}
		s.Replicas = append(s.Replicas, rp)
	}
	if r.Balancer != nil {
		f := r.Balancer.Status().Fraction
		s.BalanceFraction = &f
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readNice reads a process's nice value from /proc/PID/stat (field 19);
// nil when the process is gone or unreadable.
func readNice(pid int) *int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 17 {
		return nil
	}
	n, err := strconv.Atoi(f[16]) // f[0] is field 3
	if err != nil {
		return nil
	}
	return &n
}
