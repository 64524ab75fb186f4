package tierctl

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"tierdb/internal/osprio"
	"tierdb/internal/procfs"
	"tierdb/internal/qos"
)

// The high tier's automatic slice (qos.Config.SliceAuto). Under Linux's
// EEVDF scheduler a thread that wakes waits for the running task's slice to
// end, however heavy its weight, unless its own slice is shorter. Among
// tierdb's own processes that wait is short and the slice buys nothing
// (fig5-paper); beside another program that keeps the CPU busy it is most
// of a high-tier request's time (shared-host: 6× its idle p50, 1.1× with a
// 100 µs slice). So the high tier's backends and tierdb's threads get
// qos.AutoSlice while other programs keep the CPUs tierdb runs on busy, and
// the kernel's default otherwise.
//
// watchHost looks once every hostPeriod at /proc: how much of those CPUs'
// time went to processes outside tierdb's own (tierdb, the PostgreSQL
// servers it runs or whose backends it holds, and their children), and how
// much was idle. It takes the slice when others used at least otherOn of a
// CPU while less than idleOn of one was left idle (with an idle CPU a
// waking thread does not wait), and gives it back after calmLooks looks in
// a row without that.
const (
	hostPeriod = time.Second
	lookPause  = 100 * time.Microsecond
	otherOn    = 0.25
	idleOn     = 0.5
	calmLooks  = 5
)

// HostLoad is the last look at the CPUs tierdb runs on, in CPUs (1 is one
// CPU's whole time): Other is what processes outside tierdb's own used,
// Idle what nobody did; Contended says the automatic slice is in force.
// Watching is false while nothing follows the host (QoS off, a fixed
// slice, a kernel without custom slices, a PostgreSQL on another host).
type HostLoad struct {
	Other, Idle         float64
	Contended, Watching bool
}

// hostTimes is one reading, in clock ticks: the CPUs tierdb runs on (their
// time running tasks, on interrupts and idle) and the CPU time tierdb's own
// processes used, living or ended. what names the CPUs and process trees
// read: two readings of different ones do not compare.
type hostTimes struct {
	busy, irq, idle, own uint64
	cpus                 int
	what                 string
}

// load is what happened between two readings, in CPUs; ok is false when
// they do not compare. Others used what was busy but not ours; interrupts,
// which the kernel may charge to no task (tierdb's own loopback traffic
// among them), count as nobody's, and time the hypervisor took (steal)
// counts nowhere.
func (cur hostTimes) load(prev hostTimes) (other, idle float64, ok bool) {
	if cur.what != prev.what || cur.busy < prev.busy || cur.irq < prev.irq || cur.idle < prev.idle || cur.own < prev.own {
		// Other CPUs or processes, or a process tree that lost time
		// (a postmaster killed, its backends left to init).
		return 0, 0, false
	}
	busy, ours := float64(cur.busy-prev.busy), float64(cur.own-prev.own)
	idl, all := float64(cur.idle-prev.idle), float64(cur.busy-prev.busy+cur.irq-prev.irq+cur.idle-prev.idle)
	if all <= 0 {
		return 0, 0, false
	}
	scale := float64(cur.cpus) / all
	return min(max(busy-ours, 0)*scale, float64(cur.cpus)), idl * scale, true
}

// contention decides from successive looks whether the slice is in force.
type contention struct {
	on   bool
	calm int
}

func (c *contention) observe(other, idle float64) bool {
	switch {
	case other >= otherOn && idle < idleOn:
		c.on, c.calm = true, 0
	case c.on:
		if c.calm++; c.calm >= calmLooks {
			c.on, c.calm = false, 0
		}
	}
	return c.on
}

// readHostTimes reads the CPUs in cpus and the processes under roots (each
// counted once, with the time of its children that ended). Children are
// read two levels below tierdb (its PostgreSQL servers and their
// processes) and one below another root (an external server's
// postmaster): PostgreSQL's backends start no processes of their own.
// It pauses for lookPause before each process: a goroutine that reads
// /proc holds its P throughout, and with tierdb on one CPU (GOMAXPROCS 1)
// a look at once would hold back every request that arrived meanwhile,
// for 0.4 ms with ten PostgreSQL processes (each costs about 15 µs on
// this project's VM) and twice that beside a busy program, which is when
// looks matter. Paused, a request waits for one process's read at most.
func readHostTimes(cpus osprio.CPUSet, self int, roots []int) (hostTimes, error) {
	per, err := procfs.ReadCPUTimes()
	if err != nil {
		return hostTimes{}, err
	}
	h := hostTimes{cpus: len(cpus), what: fmt.Sprint(cpus, self, roots)}
	for _, id := range cpus {
		c := per[id] // zero for a CPU gone offline
		h.busy += c.Busy
		h.irq += c.IRQ
		h.idle += c.Idle + c.IOWait
	}
	seen := map[int]bool{}
	var walk func(pid, levels int) error
	walk = func(pid, levels int) error {
		if seen[pid] {
			return nil
		}
		seen[pid] = true
		time.Sleep(lookPause)
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return nil // it ended meanwhile: its parent's children's time has it
		}
		h.own += st.UTime + st.STime + st.CUTime + st.CSTime
		if levels == 0 {
			return nil
		}
		kids, err := procfs.Children(pid)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, k := range kids {
			if err := walk(k, levels-1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(self, 2); err != nil {
		return hostTimes{}, err
	}
	for _, r := range roots {
		if err := walk(r, 1); err != nil {
			return hostTimes{}, err
		}
	}
	return h, nil
}

// watchHost keeps the high tier's automatic slice in line with the host,
// until Close.
func (c *Controller) watchHost() {
	tick := time.NewTicker(hostPeriod)
	defer tick.Stop()
	var (
		prev hostTimes
		have bool
		cont contention
	)
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		cpus, self, roots, ok := c.hostWatchTargets()
		if !ok {
			have, cont = false, contention{}
			c.setHostLoad(HostLoad{})
			continue
		}
		cur, err := readHostTimes(cpus, self, roots)
		if err != nil {
			c.mu.Lock()
			c.warnOnce("host", "cannot read the host's CPU use; the high tier's automatic slice stays at the kernel's default", "err", err)
			c.mu.Unlock()
			have = false
			continue
		}
		if have {
			if other, idle, ok := cur.load(prev); ok {
				c.setHostLoad(HostLoad{Other: other, Idle: idle, Contended: cont.observe(other, idle), Watching: true})
			}
		}
		prev, have = cur, true
	}
}

// hostWatchTargets says which CPUs and process trees watchHost reads: the
// CPUs tierdb may run on and its CPU pools', tierdb itself (self) and the
// postmasters whose backends it holds that are not its children (roots:
// servers on this host that tierdb did not start, a primary's and its
// standbys'); ok is false while there is nothing to watch for (QoS off, a
// fixed slice, a kernel without custom slices, backends that are not local
// processes).
func (c *Controller) hostWatchTargets() (cpus osprio.CPUSet, self int, roots []int, ok bool) {
	c.mu.Lock()
	if !c.cfg.Enabled || !c.cfg.SliceAuto || c.disabled || !c.slices {
		c.mu.Unlock()
		return nil, 0, nil, false
	}
	pools := c.cfg.Pools
	parents := slices.Sorted(maps.Values(c.parents))
	c.mu.Unlock()

	self = os.Getpid()
	cpus, err := osprio.Affinity(self)
	if err != nil {
		return nil, 0, nil, false
	}
	for _, pool := range [][]int{pools.Priority, pools.Standard, pools.Restricted} {
		cpus = append(cpus, pool...)
	}
	slices.Sort(cpus)
	// The backends' parents, each once: a postmaster per node, or init
	// for backends whose postmaster died.
	for _, pm := range slices.Compact(parents) {
		if pm <= 1 {
			continue
		}
		if st, err := procfs.ReadStat(pm); err == nil && st.PPID != self && isLocalPostgres(pm) {
			roots = append(roots, pm)
		}
	}
	return slices.Compact(cpus), self, roots, true
}

// setHostLoad records a look and, when the slice comes into force or ends,
// applies it to the high tier's backends (and those inheriting from it)
// and to tierdb's threads.
func (c *Controller) setHostLoad(l HostLoad) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := l.Contended != c.host.Contended
	c.host = l
	if !changed {
		return
	}
	switch {
	case l.Contended:
		c.log.Info("other programs keep the server's CPUs busy: the high tier's backends and tierdb's threads take a short time slice", "slice", qos.AutoSlice, "otherCPUs", l.Other, "idleCPUs", l.Idle)
	case l.Watching:
		c.log.Info("the server's CPUs are no longer busy with other programs: the high tier's backends and tierdb's threads have the kernel's time slice again")
	}
	c.applySelf()
	if c.disabled {
		return
	}
	for pid, t := range c.backends {
		if t == qos.High || c.boosted[pid] {
			c.apply(pid, t)
		}
	}
}
