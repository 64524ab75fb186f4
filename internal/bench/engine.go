package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"tierdb/internal/bench/rig"
)

// engine runs the scenario's runs on one PostgreSQL.
type engine struct {
	opts    Options
	sc      *Scenario
	layout  Layout
	clients []int // resolved client count per group
	pg      *pgServer
	wl      *workload
}

// serverCPUs is where tierdb runs: pinned in the split layout, anywhere
// otherwise.
func (e *engine) serverCPUs() []int {
	if e.layout.Mode == LayoutSplit {
		return e.layout.ServerCPUs
	}
	return nil
}

func (e *engine) startTierdb(ctx context.Context, args, env []string, logName string) (*rig.Tierdb, error) {
	pre := []string{"--log-level", "info"}
	if standbys := e.pg.StandbyConnStrings(); len(standbys) > 0 {
		pre = append(pre, "--standby-urls", strings.Join(standbys, ","))
	}
	t, err := rig.StartTierdb(ctx, rig.TierdbOptions{
		Bin:         e.opts.Tierdb,
		PostgresURL: e.pg.Cluster.ConnString(),
		Args:        append(pre, args...),
		Env:         env,
		CPUs:        e.serverCPUs(),
		LogPath:     filepath.Join(e.opts.OutDir, "logs", logName),
		Metrics:     true,
	})
	if err != nil {
		return nil, err
	}
	if err := e.pg.joinServerGroup(t.PID()); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	return t, nil
}

// load inserts the records once, through a QoS-off tierdb.
func (e *engine) load(ctx context.Context) error {
	fmt.Fprintf(e.opts.Stdout, "loading %d records (%d fields of %d bytes)\n", e.sc.Records, e.sc.FieldCount, e.sc.FieldLength)
	t, err := e.startTierdb(ctx, []string{"--qos", "off"}, nil, "load.log")
	if err != nil {
		return err
	}
	defer t.Stop()
	const loaders, batch = 2, 500
	c, err := mongo.Connect(clientOptions(t.Addr(), "bench-load", loaders, nil))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())
	coll := c.Database(benchDatabase).Collection(benchCollection)
	if err := coll.Drop(ctx); err != nil {
		return fmt.Errorf("dropping %s.%s: %w", benchDatabase, benchCollection, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, loaders)
	for l := range loaders {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(l), 7))
			for start := l * batch; start < e.sc.Records; start += loaders * batch {
				docs := make([]any, 0, batch)
				for id := start; id < min(start+batch, e.sc.Records); id++ {
					docs = append(docs, e.wl.doc(int64(id), rng))
				}
				if _, err := coll.InsertMany(ctx, docs); err != nil {
					errs[l] = fmt.Errorf("loading records: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("counting records: %w", err)
	}
	if n != int64(e.sc.Records) {
		return fmt.Errorf("after loading, the collection holds %d records, want %d", n, e.sc.Records)
	}
	// Fresh statistics and a clean buffer state for the first run.
	return e.pg.exec(ctx, "VACUUM ANALYZE")
}

// runOne runs one variant (or the baseline) on a fresh tierdb.
func (e *engine) runOne(ctx context.Context, rep int, v Variant) (run RunResult, err error) {
	baseline := v.Name == BaselineVariant
	run = RunResult{Rep: rep, Variant: v.Name, Args: v.ServeArgs()}
	env := v.Env
	var cred *options.Credential
	if v.Auth {
		var pwEnv string
		pwEnv, cred = benchCredential()
		env = append(slices.Clone(v.Env), pwEnv)
	}
	args := run.Args
	if e.opts.CPUProfile > 0 {
		args = append(slices.Clone(args), "--pprof")
	}
	t, err := e.startTierdb(ctx, args, env, fmt.Sprintf("rep%d-%s.log", rep, v.Name))
	if err != nil {
		return run, err
	}
	var profile *cpuProfile
	defer func() {
		if perr := profile.wait(); perr != nil && err == nil {
			err = fmt.Errorf("CPU profile: %w", perr)
		}
		if serr := t.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	if cred != nil {
		defer func() {
			if derr := dropBenchUser(context.Background(), t.Addr(), cred); derr != nil && err == nil {
				err = fmt.Errorf("dropping the bench user: %w", derr)
			}
		}()
	}
	// A checkpoint now rather than in the middle of the measurement.
	if err := e.pg.exec(ctx, "CHECKPOINT"); err != nil {
		return run, fmt.Errorf("CHECKPOINT: %w", err)
	}
	if v.BusyLoop {
		stop, err := startBusyLoops(e.serverCPUs())
		if err != nil {
			return run, err
		}
		defer stop()
	}

	// The groups of this run: the baseline has only the time-sensitive
	// ones, starting at once.
	type member struct {
		g       Group
		clients int
	}
	var groups []member
	for i, g := range e.sc.Groups {
		if baseline {
			if g.Role != RoleTimeSensitive {
				continue
			}
			g.StartAfter = 0
		}
		groups = append(groups, member{g, g.clientsIn(v, e.clients[i])})
	}

	conns := make([][]*tierClient, len(groups))
	writers := make([]*tierClient, len(groups)) // S groups' writers
	defer func() {
		for _, cs := range conns {
			for _, c := range cs {
				c.close()
			}
		}
		for _, c := range writers {
			if c != nil {
				c.close()
			}
		}
	}()
	var users *runUsers
	if e.sc.usesUsers() {
		var specs []userSpec
		for _, m := range groups {
			for k := range m.g.users(m.clients) {
				spec := userSpec{name: userName(m.g.Name, k), tier: m.g.Tier, weight: m.g.Weight, slo: m.g.SLO}
				if v.WithoutSLOs {
					spec.slo = nil
				}
				specs = append(specs, spec)
			}
		}
		if users, err = createUsers(ctx, t.Addr(), cred, specs); err != nil {
			return run, err
		}
		defer func() {
			if derr := users.drop(context.Background()); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	stamps := make([]*stampWriter, len(groups))
	for gi, m := range groups {
		rp := m.g.readPreference(v)
		for ci := range m.clients {
			login := cred
			if m.g.ConnectionsPerUser > 0 {
				login = users.credential(userName(m.g.Name, ci/m.g.ConnectionsPerUser))
			}
			c, err := connectTierClient(ctx, t.Addr(), fmt.Sprintf("bench-%s-%d", m.g.Name, ci), m.g.Tier, m.g.WriteConcern, rp, login)
			if err != nil {
				return run, fmt.Errorf("client %d of group %s: %w", ci, m.g.Name, err)
			}
			conns[gi] = append(conns[gi], c)
		}
		if m.g.Kind == KindStaleness {
			c, err := connectTierClient(ctx, t.Addr(), "bench-"+m.g.Name+"-writer", m.g.Tier, m.g.WriteConcern, nil, cred)
			if err != nil {
				return run, fmt.Errorf("the writer of group %s: %w", m.g.Name, err)
			}
			writers[gi] = c
			stamps[gi] = &stampWriter{doc: fmt.Sprintf("%s-rep%d-%s", m.g.Name, rep, v.Name), log: &stampLog{}}
			if err := stamps[gi].init(ctx, c, e.sc.Replicas+1); err != nil {
				return run, fmt.Errorf("group %s: writing stamp 0: %w", m.g.Name, err)
			}
		}
	}

	syncsA, syncMsA, _ := walSyncs(ctx, e.pg.Cluster.ConnString())
	backendsA, _ := backendCPU(ctx, e.pg.Cluster.ConnString())
	sampler, err := startWaitSampler(ctx, e.pg.Cluster.ConnString())
	if err != nil {
		return run, fmt.Errorf("sampling pg_stat_activity: %w", err)
	}
	defer sampler.stop()
	metricsA, err := scrapeMetrics(ctx, t.MetricsAddr())
	if err != nil {
		return run, fmt.Errorf("reading tierdb's metrics: %w", err)
	}
	cpuA, _ := rig.ReadCPUTimes()
	tierdbA, pgA, selfA := processCPU(t.PID()), e.pg.postgresCPU(), processCPU(os.Getpid())
	runCtx, cancel := context.WithTimeout(ctx, e.sc.MaxRunTime.D())
	defer cancel()
	start := time.Now()
	run.Start = start.UTC()
	if e.opts.CPUProfile > 0 {
		path := filepath.Join(e.opts.OutDir, "logs", fmt.Sprintf("rep%d-%s.cpu.pb.gz", rep, v.Name))
		profile = startCPUProfile(ctx, t.MetricsAddr(), e.sc.Warmup.D(), e.opts.CPUProfile, path)
	}
	var poller *replPoller
	if e.sc.Replicas > 0 {
		interval := min(max(e.sc.Period.D()/10, 200*time.Millisecond), time.Second)
		if poller, err = startReplPoller(ctx, t.Addr(), cred, start, interval); err != nil {
			return run, fmt.Errorf("polling replSetGetStatus: %w", err)
		}
		defer func() {
			if poller != nil {
				_, _, _ = poller.stop()
			}
		}()
	}

	// Groups that end afterOthers stop that long after all the others.
	var bounded sync.WaitGroup
	stops := make([]chan struct{}, len(groups))
	recs := make([][]*recorder, len(groups))
	readers := make([][]*staleReader, len(groups))
	writerRecs := make([]*recorder, len(groups))
	writerStops := make([]chan struct{}, len(groups))
	var writersDone sync.WaitGroup
	progress := make([]atomic.Int64, len(groups))
	var all sync.WaitGroup
	for gi, m := range groups {
		seed := uint64(rep)<<32 | uint64(gi)<<16
		var groupDone sync.WaitGroup
		if sw := stamps[gi]; sw != nil {
			// The writer stamps from the group's start until its readers
			// are done.
			sw.start = start
			wg := m.g
			wg.Duration, wg.Ops, wg.Mode, wg.Rate = 0, 0, ModeClosed, 0
			if m.g.WriteRate > 0 {
				wg.Mode, wg.Rate = ModeRate, m.g.WriteRate
			}
			writerRecs[gi] = newRecorder(false, seed|0xffff)
			writerStops[gi] = make(chan struct{})
			var ignored atomic.Int64
			w := worker{g: wg, client: writers[gi], rec: writerRecs[gi], start: start, done: &ignored, stop: writerStops[gi], stampW: sw}
			writersDone.Go(func() { w.run(runCtx) })
		}
		for ci, c := range conns[gi] {
			rec := newRecorder(*m.g.Samples, seed|uint64(ci))
			if e.sc.Replicas > 0 && m.g.Kind == KindYCSB {
				rec.keepPeriods(e.sc.Period.D())
			}
			recs[gi] = append(recs[gi], rec)
			w := worker{
				g: m.g, wl: e.wl, client: c, rec: rec, start: start, done: &progress[gi],
				rng: clientRand(seed|uint64(ci), v.Name),
			}
			if stamps[gi] != nil {
				w.stampR = &staleReader{doc: stamps[gi].doc, start: start}
				readers[gi] = append(readers[gi], w.stampR)
			}
			if m.g.AfterOthers > 0 {
				if stops[gi] == nil {
					stops[gi] = make(chan struct{})
				}
				w.stop = stops[gi]
			} else {
				bounded.Add(1)
			}
			groupDone.Add(1)
			all.Go(func() {
				defer groupDone.Done()
				if w.stop == nil {
					defer bounded.Done()
				}
				w.run(runCtx)
			})
		}
		if stop := writerStops[gi]; stop != nil {
			go func() {
				groupDone.Wait()
				close(stop)
			}()
		}
	}
	othersDone := make(chan struct{})
	go func() {
		bounded.Wait()
		close(othersDone)
	}()
	for gi, stop := range stops {
		if stop == nil {
			continue
		}
		go func() {
			select {
			case <-othersDone:
			case <-runCtx.Done():
			}
			select {
			case <-time.After(groups[gi].g.AfterOthers.D()):
			case <-runCtx.Done():
			}
			close(stop)
		}()
	}
	names := make([]string, len(groups))
	for gi, m := range groups {
		names[gi] = m.g.Name
	}
	stopProgress := showProgress(e.opts.Progress, fmt.Sprintf("rep %d/%d %s", rep, e.sc.Repeat, v.Name), start, names, progress)
	all.Wait()
	writersDone.Wait()
	stopProgress()
	run.WallSeconds = time.Since(start).Seconds()
	if poller != nil {
		var last bson.Raw
		var perr error
		run.Repl, last, perr = poller.stop()
		poller = nil
		if perr != nil {
			return run, fmt.Errorf("polling replSetGetStatus: %w", perr)
		}
		if js, err := bson.MarshalExtJSON(last, false, false); err == nil {
			run.ReplStatus = js
		}
	}
	run.CutOff = runCtx.Err() != nil && ctx.Err() == nil
	if ctx.Err() != nil {
		return run, ctx.Err()
	}

	cpuB, _ := rig.ReadCPUTimes()
	run.Server = ServerUsage{
		TierdbCPU:   processCPU(t.PID()) - tierdbA,
		PostgresCPU: e.pg.postgresCPU() - pgA,
	}
	run.Server.BusyPct, run.Server.StealPct, run.Server.IOWait = cpuShares(cpuA, cpuB, e.layout.ServerCPUs)
	if run.WallSeconds > 0 {
		run.Server.LoadGenCPUPct = 100 * (processCPU(os.Getpid()) - selfA) / (run.WallSeconds * float64(len(e.layout.LoadCPUs)))
	}
	run.Server.LoadBusyPct, _, _ = cpuShares(cpuA, cpuB, e.layout.LoadCPUs)
	if e.layout.Mode == LayoutSplit && run.WallSeconds > 0 {
		ours := 100 * (run.Server.TierdbCPU + run.Server.PostgresCPU) / (run.WallSeconds * float64(len(e.layout.ServerCPUs)))
		run.Server.OthersPct = max(run.Server.BusyPct-ours, 0)
	}
	d := &run.Diagnostics
	d.Waits, d.WaitRounds = sampler.stop()
	if backendsB, err := backendCPU(ctx, e.pg.Cluster.ConnString()); err == nil {
		d.BackendCPU = backendCPUDelta(backendsA, backendsB)
	}
	if n, ms, err := walSyncs(ctx, e.pg.Cluster.ConnString()); err == nil {
		d.WALSyncs, d.WALSyncMs = n-syncsA, ms-syncMsA
	}
	metricsB, err := scrapeMetrics(ctx, t.MetricsAddr())
	if err != nil {
		return run, fmt.Errorf("reading tierdb's metrics: %w", err)
	}
	d.Tierdb = metricsB.Tiers
	run.Server.TierdbAllocBytes = metricsB.AllocBytes - metricsA.AllocBytes
	run.Server.TierdbGCs = metricsB.GCs - metricsA.GCs

	var readSeries []int32
	var readLatency []*Histogram
	for gi, m := range groups {
		gr := mergeGroup(m.g, m.clients, recs[gi])
		gr.ReadPreference = m.g.readPreference(v)
		if sw := stamps[gi]; sw != nil {
			var rs [][]staleRead
			for _, r := range readers[gi] {
				rs = append(rs, r.reads)
			}
			gr.Staleness = stalenessOf(stalenessBound(gr.ReadPreference), sw.log.snapshot(), rs)
			wr := writerRecs[gi]
			gr.Staleness.WriteLatency = &wr.hist
			if wr.errs > 0 && gr.FirstError == "" {
				gr.FirstError = "writer: " + wr.firstErr
			}
			gr.Errors += wr.errs
		} else if e.sc.Replicas > 0 {
			for i, c := range gr.ReadSeries {
				for len(readSeries) <= i {
					readSeries = append(readSeries, 0)
				}
				readSeries[i] += c
			}
			for p, h := range periodReadLatency(recs[gi]) {
				for len(readLatency) <= p {
					readLatency = append(readLatency, &Histogram{})
				}
				readLatency[p].Merge(h)
			}
		}
		run.Groups = append(run.Groups, gr)
	}
	for gi, m := range groups {
		for k := range m.g.users(m.clients) {
			lo := k * m.g.ConnectionsPerUser
			hi := min(lo+m.g.ConnectionsPerUser, len(recs[gi]))
			run.Users = append(run.Users, userRun(userName(m.g.Name, k), m.g.Name, m.g.Weight, recs[gi][lo:hi]))
		}
	}
	run.Fairness = fairnessOf(run.Users, e.sc.Warmup.D())
	if e.sc.Replicas > 0 {
		run.Periods = periodSeries(e.sc.Period.D(), run.WallSeconds, readSeries, readLatency, run.Repl)
	}
	run.TSStart, run.TSEnd = tsPhase(run.Groups)

	// The tiers must still be what the clients declared, or the run
	// measured something else.
	for gi := range groups {
		for _, c := range append(slices.Clone(conns[gi]), writers[gi]) {
			if c == nil {
				continue
			}
			if err := c.checkTier(ctx); err != nil {
				return run, err
			}
		}
	}
	if v.QoS == "on" {
		// Per-user logins see only their own part of qosStatus: ask as the
		// administrator that created them.
		status := conns[0][0].client
		if users != nil {
			status = users.admin
		}
		var reply bson.Raw
		if err := status.Database("admin").RunCommand(ctx, bson.D{{Key: "qosStatus", Value: 1}}).Decode(&reply); err == nil {
			if js, err := bson.MarshalExtJSON(reply, false, false); err == nil {
				run.QoSStatus = js
			}
		}
	}
	if t.Exited() {
		return run, fmt.Errorf("tierdb exited during the run; its log:\n%s", t.LogTail())
	}
	return run, nil
}

// tsPhase spans the time-sensitive groups' operations.
func tsPhase(groups []GroupRun) (start, end float64) {
	first := true
	for _, g := range groups {
		if g.Role != RoleTimeSensitive || g.Ops == 0 {
			continue
		}
		if first || g.Start < start {
			start = g.Start
		}
		end = max(end, g.End)
		first = false
	}
	return start, end
}

func tierdbVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// clientRand is a client's generator: its own stream for each repetition,
// group, client and variant. Both halves of the PCG state are scrambled:
// seeds that differ in a few bits alone gave correlated streams, so that
// "uniform" keys fell on the noise's hot keys. The variant is part of it
// because a repetition's variants must not replay the same updates: a
// later variant would then find most values already in place, and an
// update that changes nothing writes nothing (it made whichever variant
// ran second look 10 % faster).
func clientRand(seed uint64, variant string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(variant))
	x := splitmix64(seed ^ h.Sum64())
	return rand.New(rand.NewPCG(x, splitmix64(x)))
}

// splitmix64 scrambles x (the finaliser of the SplitMix64 generator): nearby
// inputs give unrelated outputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
