package tierctl

import (
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tierdb/internal/osprio"
	"tierdb/internal/procfs"
	"tierdb/internal/qos"
)

// Without high-tier traffic the slice comes with the first look at a busy
// host and goes only after calmLooks calm looks in a row; other programs
// with a CPU left idle, or a busy host that is busy with tierdb's own work,
// are calm. Others under otherOn do not take the slice but, down to
// otherKeep, keep it.
func TestContentionTakesTheSliceAndHoldsItThroughShortCalms(t *testing.T) {
	var c contention
	busy, calm := [2]float64{1, 0.1}, [2]float64{0.05, 0}
	look := func(l [2]float64) bool { return c.observe(l[0], l[1], 0, 0) }
	if look(calm) || look([2]float64{1, 1}) || look([2]float64{0.2, 0}) || look([2]float64{otherKeep, 0}) {
		t.Fatal("took the slice with a CPU idle, or with others under a quarter of one")
	}
	if !look(busy) {
		t.Fatal("a busy host did not take the slice")
	}
	for i := 1; i < calmLooks; i++ {
		if !look(calm) {
			t.Fatalf("gave the slice back after %d calm looks, want %d", i, calmLooks)
		}
	}
	if !look(busy) {
		t.Fatal("lost the slice on a busy look")
	}
	// Once taken, others kept down to otherKeep (by the high tier's
	// priority) still keep the host busy.
	for range calmLooks {
		if !look([2]float64{otherKeep, 0}) {
			t.Fatal("gave the slice back while others still used otherKeep of a CPU")
		}
	}
	for range calmLooks - 1 {
		look(calm)
	}
	if look(calm) {
		t.Fatalf("kept the slice after %d calm looks in a row", calmLooks)
	}
}

// With the high tier's backends running, their wait per timeslice decides
// on a busy host: a short one (a client beside tierdb) gives the slice
// back for a trial (the next look comes sooner), a long one on the kernel's
// slice (a busy program) takes it for as long as the host stays busy; a
// wait too few timeslices long, or between the two bounds with the slice
// off, changes nothing.
func TestContentionFollowsTheHighTiersWait(t *testing.T) {
	var c contention
	look := func(wait time.Duration, slices uint64) bool { return c.observe(1, 0.1, wait, slices) }
	client, hog, between := waitKeep/2, 3*waitTake, (waitKeep+waitTake)/2
	if !look(0, 0) {
		t.Fatal("a busy host without high-tier traffic did not take the slice")
	}
	if !look(client, waitSlices-1) || !look(between, waitSlices) {
		t.Fatal("gave the slice back on a wait over too few timeslices, or one above waitKeep")
	}
	if look(client, waitSlices) || !c.trial {
		t.Fatal("kept the slice while the high tier's backends waited little, or not as a trial")
	}
	if look(client, waitSlices) || c.trial || look(between, waitSlices) {
		t.Fatal("took the slice again on a wait under waitTake")
	}
	if !look(hog, waitSlices) {
		t.Fatal("a long wait on the kernel's slice did not take the slice")
	}
	if !look(client, waitSlices) {
		t.Fatal("gave a sure slice back while the host stayed busy")
	}
	for range calmLooks {
		c.observe(0, 1, 0, 0)
	}
	if c.on || c.sure {
		t.Fatalf("%+v after %d calm looks; want the slice off and not sure", c, calmLooks)
	}
	// Taken again without traffic, the slice is not sure: a short wait
	// gives it back.
	if !look(0, 0) || look(client, waitSlices) {
		t.Fatal("a slice taken without traffic was kept on a short wait")
	}
}

// highWait counts only backends in both readings whose counts grew.
func TestHighWaitPerTimeslice(t *testing.T) {
	us := time.Microsecond
	prev := hostTimes{high: map[int]procfs.SchedStat{1: {Wait: 100 * us, Slices: 10}, 2: {Wait: 0, Slices: 0}, 3: {Wait: 900 * us, Slices: 90}, 4: {Wait: 1, Slices: 1}}}
	cur := hostTimes{high: map[int]procfs.SchedStat{
		1: {Wait: 400 * us, Slices: 20}, // 300 µs over 10
		2: {Wait: 100 * us, Slices: 10}, // 100 µs over 10
		3: {Wait: 5 * us, Slices: 1},    // a new process under pid 3
		5: {Wait: 50 * us, Slices: 5},   // new
	}}
	if wait, n := cur.highWait(prev); wait != 20*us || n != 20 {
		t.Errorf("highWait = %v over %d, want 20µs over 20", wait, n)
	}
	if wait, n := (hostTimes{}).highWait(prev); wait != 0 || n != 0 {
		t.Errorf("no backends: %v over %d", wait, n)
	}
}

func TestLoadIsOthersTimeInCPUs(t *testing.T) {
	prev := hostTimes{busy: 1000, irq: 50, idle: 500, own: 300, cpus: 2, what: "x"}
	// 200 ticks passed on 2 CPUs (100 each): 140 busy, 60 of them ours,
	// 10 on interrupts (nobody's), 50 idle.
	cur := hostTimes{busy: 1140, irq: 60, idle: 550, own: 360, cpus: 2, what: "x"}
	if other, idle, ok := cur.load(prev); !ok || !near(other, 0.8) || !near(idle, 0.5) {
		t.Errorf("load = %v other, %v idle, %v; want 0.8 and 0.5 CPUs", other, idle, ok)
	}
	// Ours counted above what was busy (a tick's rounding): nobody else.
	over := cur
	over.own = 460
	if other, _, ok := over.load(prev); !ok || other != 0 {
		t.Errorf("other = %v, want 0", other)
	}
	// No time passed; other CPUs or process trees; a tree that lost time
	// (its postmaster killed): no answer.
	other := cur
	other.what = "y"
	lost := cur
	lost.own = 200
	for _, c := range []hostTimes{prev, other, lost} {
		if _, _, ok := c.load(prev); ok {
			t.Errorf("%+v against %+v compared", c, prev)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A busy loop in tierdb's process tree is tierdb's own time; one outside it
// (a grandchild whose parent left, as another program's) is the others', and
// a child that ended keeps its time in its parent's count.
func TestReadHostTimesTellsOwnProcessesFromOthers(t *testing.T) {
	cpus, err := osprio.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	read := func() hostTimes {
		h, err := readHostTimes(cpus, os.Getpid(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ticks := func(pid int) uint64 {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		return st.UTime + st.STime
	}
	// window reads the host around the loop's own count, so that what the
	// loop spun falls within the two readings.
	window := func(loop int) (a, b hostTimes, spun uint64) {
		a = read()
		before := ticks(loop)
		time.Sleep(700 * time.Millisecond)
		spun = ticks(loop) - before
		return a, read(), spun
	}
	kill := func(pid int) {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}

	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	a, b, spun := window(child.Process.Pid)
	if spun < 10 || b.own-a.own < spun {
		t.Errorf("own loop: own time grew %d ticks, the loop spun %d", b.own-a.own, spun)
	}
	child.Process.Kill()
	child.Wait()
	if after := read(); after.own < b.own {
		t.Errorf("a reaped child's time left the count: %d then %d", b.own, after.own)
	}

	out, err := exec.Command("sh", "-c", "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	other, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kill(other) })
	a, b, spun = window(other)
	// The test itself runs a little between the readings: a few ticks.
	if spun < 10 || b.own-a.own >= spun {
		t.Errorf("another program's loop: own time grew %d ticks, the loop spun %d", b.own-a.own, spun)
	}
	if others := (b.busy - a.busy) - min(b.own-a.own, b.busy-a.busy); others+2 < spun {
		t.Errorf("others' busy time %d ticks, under the loop's %d", others, spun)
	}
}

// The high tier's slice under SliceAuto follows the last look; a fixed one
// and the lower tiers' do not.
func TestSliceOfFollowsTheHostOnlyWhenAuto(t *testing.T) {
	cfg := qos.DefaultConfig()
	cfg.Slice[qos.Low] = 3 * time.Millisecond
	c := &Controller{cfg: cfg}
	if c.sliceOf(qos.High) != 0 || c.sliceOf(qos.Low) != 3*time.Millisecond {
		t.Errorf("calm host: high %v, low %v", c.sliceOf(qos.High), c.sliceOf(qos.Low))
	}
	c.host.Contended = true
	if c.sliceOf(qos.High) != qos.AutoSlice || c.sliceOf(qos.Normal) != 0 {
		t.Errorf("busy host: high %v, normal %v", c.sliceOf(qos.High), c.sliceOf(qos.Normal))
	}
	c.cfg.SliceAuto, c.cfg.Slice[qos.High] = false, 200*time.Microsecond
	if c.sliceOf(qos.High) != 200*time.Microsecond {
		t.Errorf("fixed slice: high %v", c.sliceOf(qos.High))
	}
}

// fakeServer starts a stand-in for a PostgreSQL server that tierdb did not
// start: a "postmaster" named by its path, as Debian's is started, whose
// parent is not this process, with one "backend" child. It returns both
// PIDs and stops them when the test ends.
func fakeServer(t *testing.T) (postmaster, backend int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// bash → "/usr/lib/postgresql/15/bin/postgres" (a subshell) →
	// "postgres: app db idle" (a sleep).
	cmd := exec.Command("bash", "-c", `(exec -a /usr/lib/postgresql/15/bin/postgres bash -c 'exec -a "postgres: app db idle" sleep 30 & echo $!; wait') & wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("pkill", "-P", strconv.Itoa(cmd.Process.Pid)).Run()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make([]byte, 32)
	n, err := out.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	if backend, err = strconv.Atoi(strings.TrimSpace(string(line[:n]))); err != nil {
		t.Fatal(err)
	}
	// The background job prints its PID before it has exec'd.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(backend) + "/cmdline"); strings.HasPrefix(string(b), "postgres: ") {
			break
		}
	}
	st, err := procfs.ReadStat(backend)
	if err != nil {
		t.Fatal(err)
	}
	postmaster = st.PPID
	t.Cleanup(func() { exec.Command("pkill", "-P", strconv.Itoa(postmaster)).Run() })
	if !isLocalPostgres(backend) || !isLocalPostgres(postmaster) || isLocalPostgres(cmd.Process.Pid) {
		t.Fatalf("isLocalPostgres: backend %v, postmaster by path %v, bash %v",
			isLocalPostgres(backend), isLocalPostgres(postmaster), isLocalPostgres(cmd.Process.Pid))
	}
	return postmaster, backend
}

// PostgreSQL servers on this host that tierdb did not start (a primary and
// a standby, their postmasters not tierdb's children) are found through the
// backends tierdb holds, so that their processes count as tierdb's own and
// not as other programs; a backend that closed no longer names its server.
// The high tier's backends are watched for their wait.
func TestHostWatchFindsThePostmastersOfEveryNode(t *testing.T) {
	primary, b1 := fakeServer(t)
	standby, b2 := fakeServer(t)
	// No goroutines: the targets a watcher would read.
	c := &Controller{log: slog.Default(), applier: osprio.NewApplier(), cfg: qos.DefaultConfig(), slices: true,
		backends: map[int]qos.Tier{}, parents: map[int]int{}, boosted: map[int]bool{}, warned: map[string]bool{}}
	c.BackendOpened(b1, qos.High)
	c.BackendOpened(b2, qos.Low)
	cpus, self, roots, high, ok := c.hostWatchTargets()
	want := []int{primary, standby}
	slices.Sort(want)
	if !ok || self != os.Getpid() || !slices.Equal(roots, want) || !slices.Equal(high, []int{b1}) {
		t.Fatalf("watch targets: ok %v, self %d, roots %v, high %v; want the postmasters %v and high [%d]", ok, self, roots, high, want, b1)
	}
	if h, err := readHostTimes(cpus, self, roots, high); err != nil || len(h.high) != 1 || h.high[b1].Slices == 0 {
		t.Fatalf("read %+v, %v; want the high backend's schedstat", h.high, err)
	}
	c.BackendClosed(b2)
	if _, _, roots, _, _ = c.hostWatchTargets(); !slices.Equal(roots, []int{primary}) {
		t.Fatalf("after the standby's backend closed: roots %v, want [%d]", roots, primary)
	}
}
