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
// 100 µs slice). Beside a client on the same CPUs, which runs only while
// it waits for tierdb's replies, the wait is short again and the slice
// costs (fig7-shared: the high tier's p50 1.14× its idle one with it, 1.01×
// without). So the high tier's backends and tierdb's threads get
// qos.AutoSlice while other programs keep the CPUs tierdb runs on busy and
// the high tier's backends wait long for a CPU, and the kernel's default
// otherwise.
//
// watchHost looks once every hostPeriod at /proc: how much of those CPUs'
// time went to processes outside tierdb's own (tierdb, the PostgreSQL
// servers it runs or whose backends it holds, and their children), how
// much was idle, and how long the high tier's backends waited on a run
// queue per timeslice (schedstat). Others using at least otherOn of a CPU
// while less than idleOn of one was left idle (with an idle CPU a waking
// thread does not wait) make the host busy; with the slice in force,
// others using otherKeep do: a busy program beside a busy high tier gets
// what the high tier leaves, 0.12–0.27 of a CPU on shared-host, and the
// slice must not go for that. contention.observe says when the slice comes
// and goes.
//
// The waits that tell a busy program from a client (this project's VM,
// per timeslice of the high tier's backends): on the kernel's slice
// 288–470 µs beside a busy loop, 12–22 µs beside co-located load
// generators; with the 100 µs slice 33–54 µs against 12–19 µs, but 19–28
// µs beside a busy loop with tierdb and PostgreSQL in a cgroup of their own
// (cpu.shares 10× the loop's): a trial then costs trialPeriod.
const (
	hostPeriod  = time.Second
	trialPeriod = 200 * time.Millisecond
	lookPause   = 100 * time.Microsecond
	otherOn     = 0.25
	otherKeep   = 0.1
	idleOn      = 0.5
	calmLooks   = 5
	// waitSlices is how many timeslices the high tier's backends must run
	// in a look for their wait to count; waitTake is the wait that takes
	// the slice on the kernel's own (a waking backend already waits about
	// as long as the slice it would get), waitKeep the wait under which
	// the slice, once taken, is tried without.
	waitSlices = 200
	waitTake   = qos.AutoSlice
	waitKeep   = 28 * time.Microsecond
)

// HostLoad is the last look at the CPUs tierdb runs on, in CPUs (1 is one
// CPU's whole time): Other is what processes outside tierdb's own used,
// Idle what nobody did; HighWait how long the high tier's backends waited
// for a CPU per timeslice, over HighSlices timeslices; Contended says the
// automatic slice is in force. Watching is false while nothing follows
// the host (QoS off, a fixed slice, a kernel without custom slices, a
// PostgreSQL on another host).
type HostLoad struct {
	Other, Idle         float64
	HighWait            time.Duration
	HighSlices          uint64
	Contended, Watching bool
}

// hostTimes is one reading, in clock ticks: the CPUs tierdb runs on (their
// time running tasks, on interrupts and idle) and the CPU time tierdb's own
// processes used, living or ended; and the high tier's backends' schedstats.
// what names the CPUs and process trees read: two readings of different
// ones do not compare.
type hostTimes struct {
	busy, irq, idle, own uint64
	cpus                 int
	what                 string
	high                 map[int]procfs.SchedStat
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

// highWait is how long the high tier's backends that lived through both
// readings waited for a CPU per timeslice in between, over how many.
func (cur hostTimes) highWait(prev hostTimes) (time.Duration, uint64) {
	var wait time.Duration
	var n uint64
	for pid, s := range cur.high {
		p, ok := prev.high[pid]
		if !ok || s.Slices < p.Slices || s.Wait < p.Wait { // a new process under an old pid
			continue
		}
		wait, n = wait+s.Wait-p.Wait, n+s.Slices-p.Slices
	}
	if n == 0 {
		return 0, 0
	}
	return wait / time.Duration(n), n
}

// contention decides from successive looks whether the slice is in force.
//
//   - Off, a busy host takes the slice when the high tier's backends ran
//     fewer than waitSlices timeslices (a sparse client's next request
//     finds it) or waited at least waitTake per timeslice: they wait on a
//     busy program, and the slice is sure until the host is calm.
//   - On and not sure, a busy host gives it back when the high tier's
//     backends ran and waited less than waitKeep: the CPU's other user is
//     a client, or a busy program that the slice keeps short. The next
//     look, on the kernel's slice, tells which; it comes after trialPeriod
//     (trial is set), so that a busy program costs the high tier that
//     long on the kernel's slice, once.
//   - On, calmLooks looks in a row without a busy host give it back.
type contention struct {
	on, sure, trial bool
	calm            int
}

func (c *contention) observe(other, idle float64, wait time.Duration, slices uint64) bool {
	busy := idle < idleOn && (other >= otherOn || c.on && other >= otherKeep)
	ran := slices >= waitSlices
	c.trial = false
	switch {
	case !busy:
		if c.on {
			if c.calm++; c.calm >= calmLooks {
				*c = contention{}
			}
		}
	case !c.on:
		if !ran || wait >= waitTake {
			*c = contention{on: true, sure: ran}
		}
	case ran && !c.sure && wait < waitKeep:
		*c = contention{trial: true}
	default:
		c.calm = 0
	}
	return c.on
}

// readHostTimes reads the CPUs in cpus, the processes under roots (each
// counted once, with the time of its children that ended) and the
// schedstats of the processes in high (without, none). Children are
// read two levels below tierdb (its PostgreSQL servers and their
// processes) and one below another root (an external server's
// postmaster): PostgreSQL's backends start no processes of their own.
// It pauses for lookPause before each process: a goroutine that reads
// /proc holds its P throughout, and with tierdb on one CPU (GOMAXPROCS 1)
// a look at once would hold back every request that arrived meanwhile,
// for 0.4 ms with ten PostgreSQL processes (each costs about 15 µs on
// this project's VM) and twice that beside a busy program, which is when
// looks matter. Paused, a request waits for one process's read at most.
func readHostTimes(cpus osprio.CPUSet, self int, roots, high []int) (hostTimes, error) {
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
	h.high = map[int]procfs.SchedStat{}
	for _, pid := range high {
		time.Sleep(lookPause)
		if s, err := procfs.ReadSchedStat(pid); err == nil {
			h.high[pid] = s
		}
	}
	return h, nil
}

// watchHost keeps the high tier's automatic slice in line with the host,
// until Close.
func (c *Controller) watchHost() {
	var (
		prev hostTimes
		have bool
		cont contention
		next = hostPeriod
	)
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(next):
		}
		next = hostPeriod
		cpus, self, roots, high, ok := c.hostWatchTargets()
		if !ok {
			have, cont = false, contention{}
			c.setHostLoad(HostLoad{})
			continue
		}
		cur, err := readHostTimes(cpus, self, roots, high)
		if err != nil {
			c.mu.Lock()
			c.warnOnce("host", "cannot read the host's CPU use; the high tier's automatic slice stays at the kernel's default", "err", err)
			c.mu.Unlock()
			have = false
			continue
		}
		if have {
			if other, idle, ok := cur.load(prev); ok {
				wait, n := cur.highWait(prev)
				l := HostLoad{Other: other, Idle: idle, HighWait: wait, HighSlices: n, Contended: cont.observe(other, idle, wait, n), Watching: true}
				c.log.Debug("host look", "otherCPUs", other, "idleCPUs", idle, "highWait", wait, "highSlices", n, "slice", l.Contended, "sure", cont.sure)
				c.setHostLoad(l)
				if cont.trial {
					next = trialPeriod
				}
			}
		}
		prev, have = cur, true
	}
}

// hostWatchTargets says which CPUs and process trees watchHost reads: the
// CPUs tierdb may run on and its CPU pools', tierdb itself (self) and the
// postmasters whose backends it holds that are not its children (roots:
// servers on this host that tierdb did not start, a primary's and its
// standbys') and the high tier's backends (high); ok is false while there
// is nothing to watch for (QoS off, a fixed slice, a kernel without custom
// slices, backends that are not local processes).
func (c *Controller) hostWatchTargets() (cpus osprio.CPUSet, self int, roots, high []int, ok bool) {
	c.mu.Lock()
	if !c.cfg.Enabled || !c.cfg.SliceAuto || c.disabled || !c.slices {
		c.mu.Unlock()
		return nil, 0, nil, nil, false
	}
	pools := c.cfg.Pools
	parents := slices.Sorted(maps.Values(c.parents))
	for pid, t := range c.backends {
		if t == qos.High {
			high = append(high, pid)
		}
	}
	c.mu.Unlock()

	self = os.Getpid()
	cpus, err := osprio.Affinity(self)
	if err != nil {
		return nil, 0, nil, nil, false
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
	return slices.Compact(cpus), self, roots, high, true
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
		c.log.Info("other programs keep the server's CPUs busy: the high tier's backends and tierdb's threads take a short time slice", "slice", qos.AutoSlice, "otherCPUs", l.Other, "idleCPUs", l.Idle, "highWait", l.HighWait, "highSlices", l.HighSlices)
	case l.Watching:
		c.log.Info("the high tier's backends and tierdb's threads have the kernel's time slice again: the server's CPUs are not busy with other programs, or the high tier's backends wait little for one", "otherCPUs", l.Other, "idleCPUs", l.Idle, "highWait", l.HighWait, "highSlices", l.HighSlices)
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
