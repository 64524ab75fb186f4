package tierctl

import (
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
	otherOn    = 0.25
	idleOn     = 0.5
	calmLooks  = 5
)

// HostLoad is the last look at the CPUs tierdb runs on, in CPUs (1 is one
// CPU's whole time): Other is what processes outside tierdb's own used,
// Idle what nobody did; Contended says the automatic slice is in force.
type HostLoad struct {
	Other, Idle float64
	Contended   bool
}

// hostTimes is one reading, in clock ticks: the busy and idle time of the
// CPUs tierdb runs on, and the CPU time tierdb's own processes used, living
// or ended.
type hostTimes struct {
	busy, idle, own uint64
	cpus            int
}

// load is what happened between two readings, in CPUs. Others used what
// was busy but not ours; time the hypervisor took (steal) counts nowhere.
func (cur hostTimes) load(prev hostTimes) (other, idle float64) {
	busy, idl := float64(cur.busy-prev.busy), float64(cur.idle-prev.idle)
	if busy+idl <= 0 || cur.cpus != prev.cpus || cur.busy < prev.busy || cur.idle < prev.idle {
		return 0, 0 // no time passed, or the CPUs changed: no answer
	}
	ours := float64(cur.own) - float64(prev.own)
	scale := float64(cur.cpus) / (busy + idl)
	return max(busy-ours, 0) * scale, idl * scale
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
// counted once, with the time of its children that ended).
func readHostTimes(cpus osprio.CPUSet, roots []int) (hostTimes, error) {
	per, err := procfs.ReadCPUTimes()
	if err != nil {
		return hostTimes{}, err
	}
	h := hostTimes{cpus: len(cpus)}
	for _, id := range cpus {
		if id < len(per) {
			h.busy += per[id].Busy
			h.idle += per[id].Idle
		}
	}
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return // it ended meanwhile: its parent's children's time has it
		}
		h.own += st.UTime + st.STime + st.CUTime + st.CSTime
		kids, _ := procfs.Children(pid)
		for _, k := range kids {
			walk(k)
		}
	}
	for _, r := range roots {
		walk(r)
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
		cpus, roots, ok := c.hostWatchTargets()
		if !ok {
			// Nothing follows the host now (sliceOf ignores it): forget it.
			have, cont = false, contention{}
			c.mu.Lock()
			c.host = HostLoad{}
			c.mu.Unlock()
			continue
		}
		cur, err := readHostTimes(cpus, roots)
		if err != nil {
			c.mu.Lock()
			c.warnOnce("host", "cannot read the host's CPU use; the high tier's automatic slice stays at the kernel's default", "err", err)
			c.mu.Unlock()
			have = false
			continue
		}
		if have {
			other, idle := cur.load(prev)
			c.setHostLoad(HostLoad{Other: other, Idle: idle, Contended: cont.observe(other, idle)})
		}
		prev, have = cur, true
	}
}

// hostWatchTargets says which CPUs and process trees watchHost reads: the
// CPUs tierdb may run on and its CPU pools', tierdb itself and the parents
// (postmasters) of the backends it holds; ok is false while there is
// nothing to watch for (QoS off, a fixed slice, a kernel without custom
// slices, backends that are not local processes).
func (c *Controller) hostWatchTargets() (cpus osprio.CPUSet, roots []int, ok bool) {
	c.mu.Lock()
	if !c.cfg.Enabled || !c.cfg.SliceAuto || c.disabled || !osprio.SlicesSupported() {
		c.mu.Unlock()
		return nil, nil, false
	}
	pools := c.cfg.Pools
	backends := make([]int, 0, len(c.backends))
	for pid := range c.backends {
		backends = append(backends, pid)
	}
	c.mu.Unlock()

	self := os.Getpid()
	cpus, err := osprio.Affinity(self)
	if err != nil {
		return nil, nil, false
	}
	for _, pool := range [][]int{pools.Priority, pools.Standard, pools.Restricted} {
		cpus = append(cpus, pool...)
	}
	roots = []int{self}
	parents := map[int]bool{}
	for _, pid := range backends {
		if st, err := procfs.ReadStat(pid); err == nil && !parents[st.PPID] {
			parents[st.PPID] = true
			roots = append(roots, st.PPID)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), roots, true
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
	if l.Contended {
		c.log.Info("other programs keep the server's CPUs busy: the high tier's backends and tierdb's threads take a short time slice", "slice", qos.AutoSlice, "otherCPUs", l.Other, "idleCPUs", l.Idle)
	} else {
		c.log.Info("the server's CPUs are no longer busy with other programs: the high tier's slice is the kernel's default again")
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
