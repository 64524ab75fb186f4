package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"tierdb/internal/commands"
	"tierdb/internal/mongoerr"
	"tierdb/internal/pgmanage"
	"tierdb/internal/qos"
	"tierdb/internal/repl"
	"tierdb/internal/router"
	"tierdb/internal/storage"
)

// replFlags are the serve flags of replication and read routing.
type replFlags struct {
	replicas      int
	standbyURLs   string
	adaptiveBound string
	balancePeriod time.Duration
	wcTimeout     time.Duration
	poll          time.Duration
	userPrefs     string
}

func (r *replFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.replicas, "replicas", 0, "hot standbys of the embedded PostgreSQL to create and supervise (0-8)")
	fs.StringVar(&r.standbyURLs, "standby-urls", "", "with --postgres-url: comma-separated URLs of hot standbys of that server")
	fs.StringVar(&r.adaptiveBound, "adaptive-max-staleness", "10s", `staleness bound of adaptive reads that give none: one duration, or per tier "high=250ms,normal=1s,low=10s"`)
	fs.DurationVar(&r.balancePeriod, "balance-period", 10*time.Second, "period of the adaptive read balancer (≥ 1s)")
	fs.DurationVar(&r.wcTimeout, "write-concern-timeout", 10*time.Second, "longest wait for replication of a write that gives no wtimeout")
	fs.StringVar(&r.userPrefs, "user-read-preference", "", `default read preference per user name for reads that carry none, e.g. "web=adaptive:250ms,reports=secondary:5s" (mode[:staleness bound])`)
	fs.DurationVar(&r.poll, "staleness-poll", 20*time.Millisecond, "how often each node's WAL position is read (1ms-100ms)")
}

func (r *replFlags) validate(external bool) error {
	switch {
	case r.replicas < 0 || r.replicas > 8:
		return fmt.Errorf("--replicas must be between 0 and 8, got %d", r.replicas)
	case r.replicas > 0 && external:
		return errors.New("--replicas creates standbys of the embedded PostgreSQL; with --postgres-url give --standby-urls")
	case r.standbyURLs != "" && !external:
		return errors.New("--standby-urls needs --postgres-url (the primary)")
	case r.balancePeriod < time.Second:
		return fmt.Errorf("--balance-period must be at least 1s, got %s", r.balancePeriod)
	case r.poll < time.Millisecond || r.poll > 100*time.Millisecond:
		return fmt.Errorf("--staleness-poll must be between 1ms and 100ms, got %s", r.poll)
	case r.wcTimeout <= 0:
		return errors.New("--write-concern-timeout must be positive")
	}
	if _, err := r.bounds(); err != nil {
		return err
	}
	_, err := r.userDefaults()
	return err
}

// userDefaults parses --user-read-preference.
func (r *replFlags) userDefaults() (map[string]router.Preference, error) {
	out := map[string]router.Preference{}
	err := eachPair(r.userPrefs, ",", func(user, v string) error {
		modeText, boundText, _ := strings.Cut(v, ":")
		mode, err := router.ParseMode(modeText)
		if err != nil {
			return fmt.Errorf("--user-read-preference %s: %w", user, err)
		}
		p := router.Preference{Mode: mode}
		if boundText != "" {
			if p.MaxStaleness, err = time.ParseDuration(boundText); err != nil || p.MaxStaleness <= 0 {
				return fmt.Errorf("--user-read-preference %s: bad staleness bound %q", user, boundText)
			}
		}
		if mode == router.Primary && p.MaxStaleness > 0 {
			return fmt.Errorf("--user-read-preference %s: mode primary takes no staleness bound", user)
		}
		out[user] = p
		return nil
	})
	return out, err
}

// bounds parses --adaptive-max-staleness.
func (r *replFlags) bounds() ([qos.NumTiers]time.Duration, error) {
	var b [qos.NumTiers]time.Duration
	if d, err := time.ParseDuration(r.adaptiveBound); err == nil && d > 0 {
		for t := range b {
			b[t] = d
		}
		return b, nil
	}
	err := eachPair(r.adaptiveBound, ",", func(k, v string) error {
		t, ok := qos.ParseTier(k)
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d <= 0 {
			return fmt.Errorf("--adaptive-max-staleness wants a duration or high=D,normal=D,low=D; got %q", r.adaptiveBound)
		}
		b[t] = d
		return nil
	})
	for t, d := range b {
		if err == nil && d == 0 {
			err = fmt.Errorf("--adaptive-max-staleness: no bound for tier %s", qos.Tier(t))
		}
	}
	return b, err
}

// standbyConfigs names the standbys given by URL.
func (r *replFlags) standbyConfigs() []storage.NodeConfig {
	var out []storage.NodeConfig
	for i, u := range strings.Split(r.standbyURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, storage.NodeConfig{Name: "standby" + strconv.Itoa(i+1), ConnString: u})
		}
	}
	return out
}

func setNodeConfigs(nodes []pgmanage.NodeInfo) (storage.NodeConfig, []storage.NodeConfig) {
	primary := storage.NodeConfig{Name: nodes[0].Name, ConnString: nodes[0].ConnString}
	var standbys []storage.NodeConfig
	for _, n := range nodes[1:] {
		if n.ConnString != "" {
			standbys = append(standbys, storage.NodeConfig{Name: n.Name, ConnString: n.ConnString})
		}
	}
	return primary, standbys
}

// startReplication starts the staleness monitor and the read balancer and
// returns what the command layer needs; set is nil for an external
// PostgreSQL, where failover is not managed by tierdb.
func (r *replFlags) startReplication(ctx context.Context, store *storage.Store, set *pgmanage.Set, log *slog.Logger) *commands.Replication {
	bounds, _ := r.bounds() // validated
	users, _ := r.userDefaults()
	balancer := router.NewBalancer(router.BalancerConfig{Period: r.balancePeriod}, time.Now())
	monitor := repl.New(repl.Options{Store: store, Logger: log, Interval: r.poll, OnRTT: balancer.ObserveRTT})
	// One round before clients come, so that standbys start with a known
	// staleness rather than an unknown (infinite) one.
	monitor.Poll(ctx, true)
	go monitor.Run(ctx)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if balancer.Tick(now) {
					st := balancer.Status()
					d := st.Decisions[len(st.Decisions)-1]
					log.Debug("read balancer", "fraction", d.Fraction, "ratio", d.Ratio, "reason", d.Reason)
				}
			}
		}
	}()
	rs := &commands.Replication{
		SetName:             "tierdb",
		Monitor:             monitor,
		Router:              router.New(router.Options{Balancer: balancer}),
		Balancer:            balancer,
		AdaptiveBound:       bounds,
		UserDefaults:        users,
		WriteConcernTimeout: r.wcTimeout,
		Members:             1 + r.replicas + len(r.standbyConfigs()),
	}
	if set != nil {
		rs.Failover = func(ctx context.Context, target string, catchUp time.Duration) error {
			return failover(ctx, store, set, monitor, target, catchUp, log)
		}
	}
	return rs
}

// failover promotes a standby of the embedded set and re-points storage.
// Requests wait meanwhile instead of failing.
func failover(ctx context.Context, store *storage.Store, set *pgmanage.Set, monitor *repl.Monitor, target string, catchUp time.Duration, log *slog.Logger) error {
	id := -1
	if target != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(target, "node"))
		if err != nil || !strings.HasPrefix(target, "node") {
			return mongoerr.Newf(mongoerr.BadValue, "to must name a standby like \"node1\", got %q", target)
		}
		id = n
	}
	nodes := set.Nodes()
	if id < 0 {
		// The most caught-up standby loses nothing and catches up fastest.
		var best uint64
		for _, m := range monitor.Members()[1:] {
			for _, n := range nodes[1:] {
				if n.Name == m.Name && m.Up && (id < 0 || m.Applied > best) {
					id, best = n.ID, m.Applied
				}
			}
		}
	}
	valid := false
	for _, n := range nodes[1:] {
		valid = valid || n.ID == id && n.ConnString != ""
	}
	if !valid {
		return mongoerr.Newf(mongoerr.BadValue, "no running standby %q to promote", target)
	}
	if err := store.BeginFailover(); err != nil {
		return mongoerr.New(mongoerr.BadValue, "a failover is already under way")
	}
	log.Warn("failover: promoting a standby", "from", nodes[0].Name, "to", "node"+strconv.Itoa(id))
	ferr := set.Failover(ctx, id, catchUp)
	after := set.Nodes()
	if after[0].ID != id {
		_ = store.EndFailover(ctx, storage.NodeConfig{}, nil)
		log.Error("failover did not happen", "err", ferr)
		return mongoerr.Newf(mongoerr.ExceededTimeLimit, "failover to node%d did not happen: the standby did not catch up in time or could not be promoted", id)
	}
	if ferr != nil {
		log.Error("failover: the new primary runs, but not every other node follows it", "err", ferr)
	}
	primary, standbys := setNodeConfigs(after)
	if err := store.EndFailover(ctx, primary, standbys); err != nil {
		return fmt.Errorf("failover: connecting to the new primary: %w", err)
	}
	log.Warn("failover done", "primary", primary.Name, "standbys", len(standbys))
	return nil
}
