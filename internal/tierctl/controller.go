package tierctl

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"tierdb/internal/osprio"
	"tierdb/internal/pgmanage"
	"tierdb/internal/procfs"
	"tierdb/internal/qos"
)

// Options configure a Controller.
type Options struct {
	Logger *slog.Logger
	// BackgroundProcesses lists PostgreSQL's background processes; nil when
	// they are not ours (an external PostgreSQL).
	BackgroundProcesses func() ([]pgmanage.BackgroundProcess, error)
}

// Controller keeps the OS settings of known PostgreSQL processes in line with
// the QoS configuration. It is safe for concurrent use.
type Controller struct {
	log     *slog.Logger
	applier *osprio.Applier
	bgProcs func() ([]pgmanage.BackgroundProcess, error)

	// flip is what SetHighActive touches, under a lock of its own: a
	// high-tier request must never wait for the system calls made under mu.
	flip flipState

	mu       sync.Mutex
	cfg      qos.Config
	backends map[int]qos.Tier
	// parents are the backends' parents when they opened: their servers'
	// postmasters, one per node (hostload.go).
	parents map[int]int
	// niced says the lower tiers' positive nice levels are in force, from
	// the high tier's first request until the hold after its last
	// (follow). Otherwise their backends run at nice 0, tierdb's own
	// level, as with QoS off.
	niced bool
	// boosted are lower-tier backends running with the high tier's
	// settings because a high-tier request waits for them (inherit.go);
	// boosts counts how often one was.
	boosted map[int]bool
	boosts  int64
	// walBoosted: the processes on the WAL path run at the high tier's
	// nice level (inherit.go, boostWALPath).
	walBoosted bool
	// disabled is set once backends turn out not to be local processes.
	disabled bool
	// noRaise is set once negative nice values are refused.
	noRaise bool
	// sessions: the kernel weighs sessions apart (autogroups) and lets
	// tierdb change their nice levels at will, so each backend's session
	// gets its nice level too (niceSettings).
	sessions bool
	// selfSlice is the slice tierdb's own threads have (applySelf).
	selfSlice time.Duration
	// host is watchHost's last look; with the slice automatic, Contended
	// gives the high tier qos.AutoSlice. slices: the kernel keeps custom
	// slices (Linux 6.12 and later).
	host   HostLoad
	slices bool
	warned map[string]bool

	dirty     chan struct{}
	stop      chan struct{}
	closeOnce sync.Once
}

// flipState is whether high-tier requests are in process, and what a flip
// of it must wake follow for. mu is taken after Controller.mu, never
// before it.
type flipState struct {
	mu     sync.Mutex
	active bool
	ended  time.Time // when the last high-tier request ended
	// spells counts the flips to active: the same count at two looks, with
	// active at both, means the high tier was busy all along in between.
	spells uint64
	// pools: every flip moves backends between CPU pools. nicePending:
	// the lower tiers' nice levels are not in force and come into force
	// at the next activation. Both are kept by refreshFlip.
	pools, nicePending bool
}

// highActive reports the flip state: whether high-tier requests are in
// process, which busy spell of the high tier this is, and when the last
// one ended.
func (c *Controller) highActive() (active bool, spell uint64, ended time.Time) {
	c.flip.mu.Lock()
	defer c.flip.mu.Unlock()
	return c.flip.active, c.flip.spells, c.flip.ended
}

// refreshFlip tells SetHighActive what its flips must wake follow for,
// after anything it depends on changed. c.mu is held.
func (c *Controller) refreshFlip() {
	c.flip.mu.Lock()
	c.refreshFlipLocked()
	c.flip.mu.Unlock()
}

// refreshFlipLocked is refreshFlip with c.flip.mu held too.
func (c *Controller) refreshFlipLocked() {
	on := !c.disabled && c.cfg.Enabled
	c.flip.pools = on && c.cfg.Pools.Enabled()
	c.flip.nicePending = on && !c.niced && c.lowerTiersHaveNice()
}

// New returns a Controller for cfg.
func New(opts Options, cfg qos.Config) *Controller {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	autogroups := osprio.AutogroupsEnabled()
	c := &Controller{
		log:      opts.Logger,
		applier:  osprio.NewApplier(),
		bgProcs:  opts.BackgroundProcesses,
		cfg:      cfg,
		backends: map[int]qos.Tier{},
		parents:  map[int]int{},
		boosted:  map[int]bool{},
		warned:   map[string]bool{},
		dirty:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		sessions: autogroups && osprio.SessionNiceUnlimited(),
		slices:   osprio.SlicesSupported(),
	}
	if cfg.Enabled && cfg.SliceAuto && !c.slices {
		c.log.Info("this kernel keeps no custom time slices (Linux 6.12 and later do): the high tier's automatic slice stays the kernel's default")
	}
	if autogroups && !c.sessions && cfg.Enabled {
		c.log.Info("the kernel shares the CPU between sessions (autogroups) and tierdb may not set their nice levels freely (no CAP_SYS_ADMIN): " +
			"the tiers' nice levels rank the backends only inside a cpu cgroup, as under the systemd unit")
	}
	c.applySelf()
	c.refreshFlip()
	go c.follow()
	go c.watchHost()
	return c
}

// BackendOpened is called when a tier's pool opens a backend.
func (c *Controller) BackendOpened(pid int, t qos.Tier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disabled {
		return
	}
	if !isLocalPostgres(pid) {
		c.disabled = true
		c.refreshFlip()
		c.log.Warn("PostgreSQL backends are not local processes (external PostgreSQL?): nice levels, CPU pools and I/O priorities are not applied; the priority channel still works", "pid", pid)
		return
	}
	c.backends[pid] = t
	if st, err := procfs.ReadStat(pid); err == nil {
		c.parents[pid] = st.PPID
	}
	c.apply(pid, t)
}

// BackendClosed is called when a pool closes a backend.
func (c *Controller) BackendClosed(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.backends, pid)
	delete(c.parents, pid)
	delete(c.boosted, pid)
	c.applier.Forget(pid)
}

// SetHighActive records whether high-tier requests are in process. What
// follows from it, the lower tiers' nice levels and CPU pool, is applied
// on the controller's own goroutine (follow), so the high-tier request
// whose admission flipped the state does not pay for the system calls.
//
// That goroutine is woken only when there is something to change: at the
// high tier's first request after a calm spell, or at every flip with CPU
// pools. A back-to-back high-tier client flips the state at each request,
// and a wake-up would compete with its request for the CPU. SetHighActive
// takes only the flip state's lock, never the one held during system calls.
func (c *Controller) SetHighActive(active bool) {
	f := &c.flip
	f.mu.Lock()
	if active && !f.active {
		f.spells++
	}
	f.active = active
	if !active {
		f.ended = time.Now()
	}
	wake := f.pools || active && f.nicePending
	f.mu.Unlock()
	if wake {
		c.kick()
	}
}

// lowerTiersHaveNice says whether a lower tier has a positive nice level,
// one that only applies while the high tier is active.
func (c *Controller) lowerTiersHaveNice() bool {
	return c.cfg.Nice[qos.Normal] > 0 || c.cfg.Nice[qos.Low] > 0
}

// minNiceHold is the shortest time the lower tiers' nice levels stay in
// force after the high tier's last request, whatever --restricted-hold
// says: a high-tier client that pauses between requests would otherwise
// turn them on and off, two wake-ups and a system call per backend, at
// every request.
const minNiceHold = 20 * time.Millisecond

// highHold is how long what follows the high tier (the lower tiers' nice
// levels, the WAL path's boost) stays after its last request. c.mu is held.
func (c *Controller) highHold() time.Duration { return max(c.cfg.Fair.HighHold, minNiceHold) }

// follow keeps the normal and low backends' nice levels and CPU pool in
// line with the high tier's activity, until Close. Their positive nice
// levels apply from the high tier's first request until HighHold (at
// least minNiceHold) after its last, as the gate's restricted share does:
// a lower tier alone must run as it would with QoS off, and at nice 19
// its backends would yield to tierdb's own threads, which its requests
// need too (where the backends and tierdb share a scheduling group: a
// cgroup, as under systemd or in a container; low-alone-cgroup in
// docs/benchmarks.md).
func (c *Controller) follow() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-c.stop:
			timer.Stop()
			return
		case <-c.dirty:
		case <-timer.C:
		}
		c.mu.Lock()
		now := time.Now()
		hold := c.highHold()
		// Decide under the flip lock, so that a flip after the decision
		// sees nicePending as it leaves it, and one before is in active.
		c.flip.mu.Lock()
		active, ended := c.flip.active, c.flip.ended
		niced := c.cfg.Enabled && c.lowerTiersHaveNice() && (active || now.Sub(ended) < hold)
		changed := niced != c.niced
		c.niced = niced
		c.refreshFlipLocked()
		c.flip.mu.Unlock()
		if !c.disabled && (changed || c.cfg.Pools.Enabled()) {
			for pid, t := range c.backends {
				if t != qos.High {
					c.apply(pid, t)
				}
			}
		}
		if c.niced {
			// Look again when the hold would end, were no request to
			// come; while one is in process, a hold from now.
			wait := hold
			if !active {
				wait = max(ended.Add(hold).Sub(now), time.Millisecond)
			}
			timer.Reset(wait)
		}
		c.mu.Unlock()
	}
}

// Close stops the controller's goroutine.
func (c *Controller) Close() { c.closeOnce.Do(func() { close(c.stop) }) }

// SetConfig swaps in a validated configuration and re-applies it to every
// known process.
func (c *Controller) SetConfig(cfg qos.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg
	c.applySelf()
	if c.disabled {
		return
	}
	for pid, t := range c.backends {
		c.apply(pid, t)
	}
	c.applyBackground()
	c.refreshFlip()
	c.kick() // the lower tiers' nice levels may now have to come into force
}

// kick wakes follow, unless a wake-up is already pending.
func (c *Controller) kick() {
	select {
	case c.dirty <- struct{}{}:
	default: // it will read the latest state
	}
}

// ApplyBackground sets the background processes' I/O priority (call once
// PostgreSQL runs, and again after it restarts).
func (c *Controller) ApplyBackground() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applyBackground()
}

func (c *Controller) applyBackground() {
	if c.bgProcs == nil || !c.cfg.Enabled {
		return
	}
	procs, err := c.bgProcs()
	if err != nil {
		c.warnOnce("bgpids", "cannot list PostgreSQL background processes", "err", err)
		return
	}
	background, walWriter := toOS(c.cfg.IO.Background), toOS(c.cfg.IO.WALWriter)
	for _, p := range procs {
		if !isLocalPostgres(p.PID) {
			continue // an external server's PID names nothing of ours here
		}
		io := &background
		if onWALPath(p.Title) {
			io = &walWriter
		}
		c.report(p.PID, c.applier.Apply(p.PID, osprio.Settings{IO: io}))
	}
}

// onWALPath says whether a helper process carries commits to durability or
// to the standbys (WAL writer, WAL sender, WAL receiver, and a standby's
// startup process, which replays): majority writes and fresh standby reads
// wait on them, so they get the WAL writer's I/O class, not the background's.
func onWALPath(title string) bool {
	switch title {
	case "walwriter", "walsender", "walreceiver", "startup":
		return true
	}
	return false
}

// apply sets one backend's nice level, slice, CPU pool and I/O priority;
// the applier skips system calls for values already in place.
func (c *Controller) apply(pid int, t qos.Tier) {
	if !c.cfg.Enabled {
		return
	}
	if c.boosted[pid] {
		t = qos.High // inheriting the priority of a high-tier request that waits for it
	}
	nice := c.cfg.Nice[t]
	if nice < 0 && c.noRaise || nice > 0 && t != qos.High && !c.niced {
		nice = 0
	}
	slice := c.sliceOf(t)
	io := toOS(c.cfg.IO.Tiers[t])
	s := c.niceSettings(nice)
	s.Slice, s.IO = &slice, &io
	if c.cfg.Pools.Enabled() {
		active, _, _ := c.highActive()
		s.CPUs = osprio.CPUSet(c.cfg.Pools.ForTier(t, active))
	}
	err := c.applier.Apply(pid, s)
	if err != nil && nice < 0 && osprio.IsPermission(err) {
		// Retry without raising priority, remember, say so once.
		c.noRaise = true
		c.warnOnce("nice", "no privilege for negative nice values: high-tier backends run at nice 0; the priority channel and CPU pools still apply", "err", err)
		zero := c.niceSettings(0)
		s.Nice, s.Session = zero.Nice, zero.Session
		err = c.applier.Apply(pid, s)
	}
	c.report(pid, err)
}

// niceSettings sets a process's nice level and, where the kernel weighs
// sessions apart (autogroups: the default outside a cpu cgroup), its
// session's. Each PostgreSQL backend leads a session of its own, in which
// its own nice level ranks it against nothing; its session's level is what
// ranks it against tierdb, the other backends and the rest of the machine.
// Inside a cpu cgroup (a systemd unit, a container) the kernel ignores the
// session's level and the process's own counts.
func (c *Controller) niceSettings(nice int) osprio.Settings {
	s := osprio.Settings{Nice: &nice}
	if c.sessions {
		s.Session = &nice
	}
	return s
}

// sliceOf is the slice tier t's backends have now: the configured one, or
// for the high tier with SliceAuto qos.AutoSlice while other programs keep
// the CPUs busy (hostload.go). c.mu is held.
func (c *Controller) sliceOf(t qos.Tier) time.Duration {
	switch {
	case t != qos.High || !c.cfg.SliceAuto:
		return c.cfg.Slice[t]
	case c.host.Contended:
		return qos.AutoSlice
	}
	return 0
}

// applySelf gives tierdb's own threads the high tier's slice (none with
// QoS off). They read, run and answer every high-tier request, and a
// thread that wakes for one would otherwise wait for the running task,
// say a lower tier's backend, to finish its slice. Threads the Go runtime
// starts later inherit the slice from the thread that starts them. Their
// nice levels stay as they are.
func (c *Controller) applySelf() {
	var slice time.Duration
	if c.cfg.Enabled {
		slice = c.sliceOf(qos.High)
	}
	if slice == c.selfSlice {
		return
	}
	c.selfSlice = slice
	// A thread started while the list is read may have inherited the old
	// slice: read it again until it holds no thread not yet set.
	done := map[int]bool{}
	for fresh := true; fresh; {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			c.warnOnce("self", "cannot list tierdb's threads to set their slice", "err", err)
			return
		}
		fresh = false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid], fresh = true, true
			nice, err := osprio.Nice(tid)
			if err == nil {
				err = osprio.SetNiceAndSlice(tid, nice, slice)
			}
			if err != nil && !osprio.IsNoSuchProcess(err) {
				c.warnOnce("self", "cannot set the slice of tierdb's threads", "err", err)
			}
		}
	}
}

func (c *Controller) report(pid int, err error) {
	switch {
	case err == nil:
	case osprio.IsNoSuchProcess(err):
		delete(c.backends, pid)
	case osprio.IsPermission(err):
		c.warnOnce("perm", "the OS refused a priority change; continuing without it", "err", err)
	default:
		c.warnOnce("other", "cannot apply OS priorities", "err", err)
	}
}

func (c *Controller) warnOnce(key, msg string, args ...any) {
	if !c.warned[key] {
		c.warned[key] = true
		c.log.Warn(msg, args...)
	}
}

func toOS(p qos.IOPrio) osprio.IOPrio {
	class := map[qos.IOClass]osprio.IOClass{
		qos.IONone: osprio.IOClassNone, qos.IORealtime: osprio.IOClassRT,
		qos.IOBestEffort: osprio.IOClassBestEffort, qos.IOIdle: osprio.IOClassIdle,
	}[p.Class]
	return osprio.IOPrio{Class: class, Level: p.Level}
}

// isLocalPostgres reports whether pid is a PostgreSQL process on this host:
// a backend or background process, whose title reads "postgres: …", or a
// postmaster, started as "postgres" or by its path (".../bin/postgres").
// An external server's backend PIDs belong to another machine (or to an
// unrelated local process), so we must not touch them.
func isLocalPostgres(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return strings.HasPrefix(argv0, "postgres") || strings.HasSuffix(argv0, "/postgres")
}

// Status is a snapshot for qosStatus.
type Status struct {
	Applied    bool // false when disabled or QoS off
	HighActive bool
	Backends   [qos.NumTiers][]int
	NoRaise    bool
	// SessionNice: each backend's session (autogroup) gets its nice
	// level too.
	SessionNice bool
	// LowerTiersNiced: the normal and low backends run at their tiers'
	// positive nice levels (the high tier is active), not at 0.
	LowerTiersNiced bool
	Syscalls        int64
	// Boosted backends inherit the high tier's priority now; Boosts
	// counts how often one started to.
	Boosted []int
	Boosts  int64
	// Slices are each tier's slices now (the high tier's may follow the
	// host); Host is the last look at it.
	Slices [qos.NumTiers]time.Duration
	Host   HostLoad
}

// Status reports what the controller manages.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	active, _, _ := c.highActive()
	st := Status{Applied: !c.disabled && c.cfg.Enabled, HighActive: active, NoRaise: c.noRaise, SessionNice: c.sessions, LowerTiersNiced: c.niced, Syscalls: c.applier.Syscalls(), Boosts: c.boosts, Host: c.host}
	for pid := range c.boosted {
		st.Boosted = append(st.Boosted, pid)
	}
	for t := range st.Slices {
		st.Slices[t] = c.sliceOf(qos.Tier(t))
	}
	for pid, t := range c.backends {
		st.Backends[t] = append(st.Backends[t], pid)
	}
	return st
}
