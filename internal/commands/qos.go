package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/osprio"
	"tierdb/internal/qos"
	"tierdb/internal/query"
)

func (h *Handlers) qosOff() error {
	return mongoerr.New(mongoerr.IllegalOperation, "QoS is off in this server (started with --qos=off)")
}

// qosStatus reports the priority channel, the OS treatment of each tier and
// the caller's own tier.
func (h *Handlers) qosStatus(_ context.Context, req *Request) (bson.D, error) {
	caller := qos.Normal
	callerDoc := bson.D{}
	if s := req.Session; s != nil {
		caller = s.Tier
		if s.User != nil {
			callerDoc = append(callerDoc, bson.E{Key: "user", Value: s.User.User.Name.String()}, bson.E{Key: "tiers", Value: tiersArray(s.User.Grants)})
		}
	}
	callerDoc = append(bson.D{{Key: "priority", Value: caller.String()}}, callerDoc...)
	m := h.opts.QoS
	// Other users' figures and the server's configuration are for those
	// who monitor the cluster; anyone may see their own tier.
	if !h.mayCluster(req.Session, auth.Actions(auth.ActQoSStatus)) {
		return bson.D{{Key: "enabled", Value: m != nil}, {Key: "caller", Value: callerDoc}}, nil
	}
	users := bson.A{}
	for _, u := range h.accounts.list() {
		d := u.doc()
		// The tier the user starts at, as configured now.
		if h.opts.Auth != nil && u.name != "" {
			if p := h.opts.Auth.Lookup(u.user); p != nil {
				d = append(d, bson.E{Key: "defaultTier", Value: p.User.DefaultTier.String()})
			}
		}
		users = append(users, d)
	}
	if m == nil {
		return bson.D{{Key: "enabled", Value: false}, {Key: "users", Value: users}, {Key: "caller", Value: callerDoc}}, nil
	}
	cfg := m.Config()
	st := m.Channel.Stats()
	os := m.Controller.Status()
	tiers := bson.D{}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		ts := st.Tiers[t]
		tiers = append(tiers, bson.E{Key: t.String(), Value: bson.D{
			{Key: "inProcess", Value: int32(ts.InProcess)},
			{Key: "waiting", Value: int32(ts.Waiting)},
			{Key: "admitted", Value: int64(ts.Admitted)},
			{Key: "waited", Value: int64(ts.Waited)},
			{Key: "cancelled", Value: int64(ts.Cancelled)},
			{Key: "guardAdmissions", Value: int64(ts.GuardAdmissions)},
			{Key: "waitMicros", Value: bson.D{
				{Key: "p50", Value: ts.WaitP50.Microseconds()},
				{Key: "p99", Value: ts.WaitP99.Microseconds()},
				{Key: "max", Value: ts.WaitMax.Microseconds()},
			}},
			{Key: "nice", Value: int32(cfg.Nice[t])},
			{Key: "sliceMicros", Value: os.Slices[t].Microseconds()},
			{Key: "sliceAuto", Value: t == qos.High && cfg.SliceAuto},
			{Key: "ioPriority", Value: cfg.IO.Tiers[t].String()},
			{Key: "backends", Value: int32sOf(os.Backends[t])},
		}})
	}
	pools := bson.D{{Key: "enabled", Value: cfg.Pools.Enabled()}}
	if cfg.Pools.Enabled() {
		active := "standard"
		if os.HighActive {
			active = "restricted"
		}
		pools = append(pools,
			bson.E{Key: "priority", Value: osprio.CPUSet(cfg.Pools.Priority).String()},
			bson.E{Key: "standard", Value: osprio.CPUSet(cfg.Pools.Standard).String()},
			bson.E{Key: "restricted", Value: osprio.CPUSet(cfg.Pools.Restricted).String()},
			bson.E{Key: "lowerTiersIn", Value: active},
		)
	}
	return bson.D{
		{Key: "enabled", Value: true},
		{Key: "threshold", Value: int32(st.Threshold)},
		{Key: "starvationGuardMS", Value: st.Guard.Milliseconds()},
		{Key: "anticipationMS", Value: float64(st.Anticipation) / float64(time.Millisecond)},
		{Key: "anticipation", Value: bson.D{
			{Key: "forObjectivesMS", Value: float64(st.ObjectiveAnticipation) / float64(time.Millisecond)},
			{Key: "periods", Value: int64(st.Anticipated)},
			{Key: "expired", Value: int64(st.AnticipationExpired)},
		}},
		{Key: "tiers", Value: tiers},
		{Key: "fair", Value: append(fairStatus(m.Gate.Stats()),
			bson.E{Key: "autoParallelism", Value: m.Auto()},
			bson.E{Key: "autoAnticipation", Value: cfg.Fair.AutoAnticipation},
			bson.E{Key: "unfairnessBound", Value: cfg.Fair.UnfairnessBound},
			bson.E{Key: "cvBound", Value: cfg.Fair.CVBound},
			bson.E{Key: "calibration", Value: calibrationStatus(m.Calibration())},
			bson.E{Key: "slos", Value: sloStatus(m.Gate.SLOs())})},
		{Key: "cpuPools", Value: pools},
		{Key: "backgroundIOPriority", Value: cfg.IO.Background.String()},
		{Key: "walWriterIOPriority", Value: cfg.IO.WALWriter.String()},
		{Key: "osPriorities", Value: bson.D{
			{Key: "applied", Value: os.Applied},
			{Key: "negativeNiceAllowed", Value: !os.NoRaise},
			{Key: "sessionNice", Value: os.SessionNice},
			{Key: "lowerTiersNiced", Value: os.LowerTiersNiced},
			{Key: "syscalls", Value: os.Syscalls},
			{Key: "inheriting", Value: int32sOf(os.Boosted)},
			{Key: "inheritances", Value: os.Boosts},
			{Key: "host", Value: bson.D{
				{Key: "otherProgramsCPUs", Value: os.Host.Other},
				{Key: "idleCPUs", Value: os.Host.Idle},
				{Key: "highWaitMicros", Value: float64(os.Host.HighWait) / float64(time.Microsecond)},
				{Key: "highTimeslices", Value: int64(os.Host.HighSlices)},
				{Key: "contended", Value: os.Host.Contended},
				{Key: "watching", Value: os.Host.Watching},
			}},
		}},
		{Key: "users", Value: users},
		{Key: "caller", Value: callerDoc},
	}, nil
}

// setQoSConfig changes threshold, starvation guard, nice levels, I/O
// priorities, CPU pools and the fair-share gate's settings at run time. The whole change is validated first;
// on any error the running configuration stays as it was.
func (h *Handlers) setQoSConfig(_ context.Context, req *Request) (bson.D, error) {
	if h.opts.QoS == nil {
		return nil, h.qosOff()
	}
	recalibrate, err := getBool(req.Cmd, "recalibrate", false)
	if err != nil {
		return nil, err
	}
	windowMS, err := getInt(req.Cmd, "calibrationWindowMS", 5000)
	if err != nil {
		return nil, err
	}
	// zeta resets the round quota ζ, which the control then moves on from:
	// an action, like recalibrate, not part of the configuration.
	var zeta int64
	if v, ok := lookup(req.Cmd, "zeta"); ok {
		if zeta, ok = query.AsInt(v); !ok || zeta < 1 || zeta > 1<<20 {
			return nil, mongoerr.New(mongoerr.BadValue, "zeta must be an integer from 1 to 1048576 (the round quota per unit of weight; the ζ control moves it on from there)")
		}
	}
	_, setsP := lookup(req.Cmd[1:], "parallelism")
	cfg, err := h.opts.QoS.Update(func(c *qos.Config) error {
		for _, e := range req.Cmd[1:] {
			if isGenericField(e.Key) || e.Key == "recalibrate" || e.Key == "calibrationWindowMS" || e.Key == "zeta" {
				continue
			}
			if err := applyQoSField(c, e); err != nil {
				return err
			}
		}
		return nil
	}, setsP)
	if err != nil {
		return nil, err
	}
	if zeta > 0 {
		h.opts.QoS.Gate.SetZeta(int(zeta))
	}
	if recalibrate {
		if err := h.opts.QoS.Recalibrate(time.Duration(windowMS)*time.Millisecond, h.store.MaxBackends()); err != nil {
			return nil, err
		}
	}
	var fairAnticipation any = float64(cfg.Fair.Anticipation) / float64(time.Millisecond)
	if cfg.Fair.AutoAnticipation {
		fairAnticipation = "auto"
	}
	return bson.D{
		{Key: "threshold", Value: int32(cfg.Threshold)},
		{Key: "starvationGuardMS", Value: cfg.StarvationGuard.Milliseconds()},
		{Key: "anticipationMS", Value: float64(cfg.Anticipation) / float64(time.Millisecond)},
		{Key: "parallelism", Value: int32(cfg.Fair.Parallelism)},
		{Key: "restricted", Value: int32(cfg.Fair.Restricted)},
		{Key: "fairAnticipationMS", Value: fairAnticipation},
		{Key: "fairUnfairness", Value: cfg.Fair.UnfairnessBound},
		{Key: "fairCV", Value: cfg.Fair.CVBound},
		{Key: "calibrating", Value: recalibrate},
	}, nil
}

// calibrationStatus is the running or last calibration of P.
func calibrationStatus(running bool, c *qos.Calibration) bson.D {
	d := bson.D{{Key: "running", Value: running}}
	if c == nil {
		return d
	}
	samples := bson.A{}
	for _, s := range c.Samples {
		samples = append(samples, bson.D{{Key: "p", Value: int32(s.P)}, {Key: "opsPerSec", Value: s.Lambda}})
	}
	d = append(d,
		bson.E{Key: "at", Value: bson.NewDateTimeFromTime(c.At)},
		bson.E{Key: "samples", Value: samples},
		bson.E{Key: "fitted", Value: c.Fitted},
		bson.E{Key: "noise", Value: c.Noise},
		bson.E{Key: "parallelism", Value: int32(c.P)},
		bson.E{Key: "forFairness", Value: c.ForFairness},
	)
	if c.Fitted {
		d = append(d, bson.E{Key: "model", Value: bson.D{{Key: "B", Value: c.Model.B}, {Key: "gamma", Value: c.Model.G}}},
			bson.E{Key: "predicted", Value: int32(c.Predicted)})
	}
	if c.Check.P > 0 {
		d = append(d, bson.E{Key: "check", Value: bson.D{{Key: "p", Value: int32(c.Check.P)}, {Key: "opsPerSec", Value: c.Check.Lambda}}})
	}
	return d
}

func int32sOf(pids []int) bson.A {
	out := bson.A{}
	for _, p := range pids {
		out = append(out, int32(p))
	}
	return out
}

// fairStatus is the gate: P, the restricted share, and per tier the round
// quota ζ, the last measured U_f and latency CV, and each user's share.
func fairStatus(st qos.GateStats) bson.D {
	tiers := bson.D{}
	for t := qos.Normal; t < qos.NumTiers; t++ {
		ts := st.Tiers[t]
		users := bson.A{}
		for _, u := range ts.Users {
			users = append(users, bson.D{
				{Key: "user", Value: u.User},
				{Key: "weight", Value: u.Weight},
				{Key: "waiting", Value: int32(u.Waiting)},
				{Key: "inProcess", Value: int32(u.InProcess)},
				{Key: "admittedInWindow", Value: int32(u.Served)},
				{Key: "meanWaitMs", Value: float64(u.MeanWait) / float64(time.Millisecond)},
			})
		}
		tiers = append(tiers, bson.E{Key: t.String(), Value: bson.D{
			{Key: "inProcess", Value: int32(st.InProcess[t])},
			{Key: "waiting", Value: int32(ts.Waiting)},
			{Key: "zeta", Value: ts.Zeta},
			{Key: "unfairness", Value: ts.Unfairness},
			{Key: "latencyCV", Value: ts.CV},
			{Key: "zetaGrown", Value: int64(ts.Grown)},
			{Key: "zetaHalved", Value: int64(ts.Halved)},
			{Key: "unfairnessLong", Value: ts.UnfairnessLong},
			{Key: "anticipationMS", Value: float64(ts.Anticipation) / float64(time.Millisecond)},
			{Key: "users", Value: users},
		}})
	}
	return bson.D{
		{Key: "parallelism", Value: int32(st.Parallelism)},
		{Key: "parallelismWhileShared", Value: st.WhileShared},
		{Key: "restricted", Value: int32(st.Restricted)},
		{Key: "highInProcess", Value: int32(st.InProcess[qos.High])},
		{Key: "tiers", Value: tiers},
	}
}

// sloStatus is each latency objective: met or not, how long the user's
// requests now wait in the round before they go ahead of it, and how many
// did.
func sloStatus(slos []qos.SLOStats) bson.A {
	out := bson.A{}
	for _, s := range slos {
		state := "met"
		switch {
		case s.Unmeetable:
			state = "cannot be met"
		case !s.Met:
			state = "missed"
		}
		out = append(out, bson.D{
			{Key: "user", Value: s.User},
			{Key: "p999ObjectiveMs", Value: float64(s.Objective) / float64(time.Millisecond)},
			{Key: "p999Ms", Value: float64(s.P999) / float64(time.Millisecond)},
			{Key: "serviceP999Ms", Value: float64(s.ServiceP999) / float64(time.Millisecond)},
			{Key: "steers", Value: steers(s)},
			{Key: "urgentAfterMs", Value: float64(s.UrgentAfter) / float64(time.Millisecond)},
			{Key: "ahead", Value: int64(s.Ahead)},
			{Key: "state", Value: state},
		})
	}
	return out
}

// steers names what an objective's controller moves: the user's urgency
// in its tier's round, or for a high-tier user the channel's anticipation.
func steers(s qos.SLOStats) string {
	if s.High {
		return "anticipation"
	}
	return "urgency"
}

func applyQoSField(c *qos.Config, e bson.E) error {
	switch e.Key {
	case "threshold":
		n, ok := query.AsInt(e.Value)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "threshold must be an integer ≥ 1")
		}
		c.Threshold = int(n)
	case "starvationGuardMS":
		n, ok := query.AsInt(e.Value)
		if !ok || n < 0 {
			return mongoerr.New(mongoerr.BadValue, "starvationGuardMS must be an integer ≥ 0 (0 turns the guard off)")
		}
		c.StarvationGuard = time.Duration(n) * time.Millisecond
	case "anticipationMS":
		// A fraction of a millisecond is a sensible value here, so
		// doubles are accepted as well as integers.
		ms, ok := asNumber(e.Value)
		if !ok || !(ms >= 0 && ms <= 1000) { // also refuses NaN
			return mongoerr.New(mongoerr.BadValue, "anticipationMS must be a number from 0 to 1000 (0 turns anticipation off)")
		}
		c.Anticipation = time.Duration(ms * float64(time.Millisecond))
	case "nice":
		return perTier(e, func(t qos.Tier, v any) error {
			n, ok := query.AsInt(v)
			if !ok {
				return mongoerr.New(mongoerr.BadValue, "nice levels must be integers between -20 and 19")
			}
			c.Nice[t] = int(n)
			return nil
		})
	case "sliceMicros":
		return perTier(e, func(t qos.Tier, v any) error {
			if t == qos.High {
				c.SliceAuto = v == "auto"
				if c.SliceAuto {
					c.Slice[t] = 0
					return nil
				}
			}
			n, ok := query.AsInt(v)
			if !ok {
				return mongoerr.New(mongoerr.BadValue, "slices are integers of microseconds: 0 (the kernel's default) or 100 to 100000; the high tier's may also be \"auto\"")
			}
			c.Slice[t] = time.Duration(n) * time.Microsecond
			return nil
		})
	case "ioPriority":
		d, ok := e.Value.(bson.D)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "ioPriority must be an object with background, high, normal, low")
		}
		for _, f := range d {
			s, ok := f.Value.(string)
			if !ok {
				return mongoerr.New(mongoerr.BadValue, "I/O priorities are strings like \"idle\" or \"best-effort/4\"")
			}
			p, err := qos.ParseIOPrio(s)
			if err != nil {
				return err
			}
			switch f.Key {
			case "background":
				c.IO.Background = p
				continue
			case "walwriter":
				c.IO.WALWriter = p
				continue
			}
			t, ok := qos.ParseTier(f.Key)
			if !ok {
				return mongoerr.Newf(mongoerr.BadValue, "unknown ioPriority field %q; allowed: background, walwriter, high, normal, low", f.Key)
			}
			c.IO.Tiers[t] = p
		}
	case "parallelism", "restricted":
		n, ok := query.AsInt(e.Value)
		if !ok || n < 0 || n > 1<<20 {
			return mongoerr.Newf(mongoerr.BadValue, "%s must be an integer ≥ 0 (0: no limit)", e.Key)
		}
		if e.Key == "parallelism" {
			c.Fair.Parallelism, c.Fair.ParallelismForFairness = int(n), false // by hand: it always holds
		} else {
			c.Fair.Restricted = int(n)
		}
	case "fairAnticipationMS":
		if e.Value == "auto" {
			c.Fair.AutoAnticipation = true
			return nil
		}
		ms, ok := asNumber(e.Value)
		if !ok || !(ms >= 0 && ms <= 1000) {
			return mongoerr.New(mongoerr.BadValue, "fairAnticipationMS must be \"auto\" or a number from 0 to 1000 (0: rounds never hold a slot)")
		}
		c.Fair.AutoAnticipation, c.Fair.Anticipation = false, time.Duration(ms*float64(time.Millisecond))
	case "fairUnfairness", "fairCV":
		v, ok := asNumber(e.Value)
		if !ok {
			return mongoerr.Newf(mongoerr.BadValue, "%s must be a number", e.Key)
		}
		if e.Key == "fairUnfairness" {
			c.Fair.UnfairnessBound = v
		} else {
			c.Fair.CVBound = v
		}
	case "cpuPools":
		d, ok := e.Value.(bson.D)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "cpuPools must be an object with priority, standard, restricted")
		}
		pools, err := parseCPUPools(d)
		if err != nil {
			return err
		}
		c.Pools = pools
	default:
		return mongoerr.Newf(mongoerr.BadValue, "unknown setQoSConfig field %q; allowed: threshold, starvationGuardMS, anticipationMS, nice, sliceMicros, ioPriority, cpuPools, parallelism, restricted, fairAnticipationMS, fairUnfairness, fairCV, zeta, recalibrate, calibrationWindowMS", e.Key)
	}
	return nil
}

func perTier(e bson.E, set func(qos.Tier, any) error) error {
	d, ok := e.Value.(bson.D)
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue, "%s must be an object with high, normal, low", e.Key)
	}
	for _, f := range d {
		t, ok := qos.ParseTier(f.Key)
		if !ok {
			return mongoerr.Newf(mongoerr.BadValue, "unknown tier %q in %s; allowed: high, normal, low", f.Key, e.Key)
		}
		if err := set(t, f.Value); err != nil {
			return err
		}
	}
	return nil
}

// parseCPUPools reads {priority, standard, restricted}, each a CPU list
// string ("0-1") or an array of CPU ids. An empty document turns pools off.
func parseCPUPools(d bson.D) (qos.CPUPools, error) {
	var p qos.CPUPools
	for _, f := range d {
		var cpus []int
		switch v := f.Value.(type) {
		case string:
			set, err := osprio.ParseCPUList(v)
			if err != nil {
				return p, mongoerr.Newf(mongoerr.BadValue, "bad CPU list for pool %q: %v", f.Key, err)
			}
			cpus = set
		case bson.A:
			for _, x := range v {
				n, ok := query.AsInt(x)
				if !ok || n < 0 {
					return p, mongoerr.Newf(mongoerr.BadValue, "CPU ids of pool %q must be non-negative integers", f.Key)
				}
				cpus = append(cpus, int(n))
			}
		default:
			return p, mongoerr.Newf(mongoerr.BadValue, "pool %q must be a CPU list string like \"0-1\" or an array of ids", f.Key)
		}
		switch f.Key {
		case "priority":
			p.Priority = cpus
		case "standard":
			p.Standard = cpus
		case "restricted":
			p.Restricted = cpus
		default:
			return p, mongoerr.Newf(mongoerr.BadValue, "unknown CPU pool %q; allowed: priority, standard, restricted", f.Key)
		}
	}
	return p, nil
}

// setCpuPools is seed 003's command: {setCpuPools: {priority, standard,
// restricted}}; an empty document turns the pools off. The pools are the
// command's value, not top-level fields, because "priority" at the top level
// is the per-request tier every command may carry.
func (h *Handlers) setCpuPools(_ context.Context, req *Request) (bson.D, error) {
	if h.opts.QoS == nil {
		return nil, h.qosOff()
	}
	spec, ok := req.Cmd[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "setCpuPools takes a document: {setCpuPools: {priority: \"0-1\", standard: \"0-1\", restricted: \"1\"}}; {} turns pools off")
	}
	pools, err := parseCPUPools(spec)
	if err != nil {
		return nil, err
	}
	cfg, err := h.opts.QoS.Update(func(c *qos.Config) error { c.Pools = pools; return nil }, false)
	if err != nil {
		return nil, err
	}
	return bson.D{
		{Key: "priority", Value: osprio.CPUSet(cfg.Pools.Priority).String()},
		{Key: "standard", Value: osprio.CPUSet(cfg.Pools.Standard).String()},
		{Key: "restricted", Value: osprio.CPUSet(cfg.Pools.Restricted).String()},
	}, nil
}

// isGenericField is a field any command may carry (driver envelope, our
// per-request priority) rather than an argument of the command.
func isGenericField(k string) bool {
	switch k {
	case "$db", "lsid", "$clusterTime", "$readPreference", "txnNumber", "autocommit", "apiVersion",
		"apiStrict", "apiDeprecationErrors", "maxTimeMS", "comment", "writeConcern", "readConcern", priorityField:
		return true
	}
	return false
}
