package tierctl

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"tierdb/internal/osprio"
	"tierdb/internal/procfs"
	"tierdb/internal/qos"
)

// The slice comes with the first look at a busy host and goes only after
// calmLooks calm looks in a row; other programs with a CPU left idle, or
// a busy host that is busy with tierdb's own work, are calm.
func TestContentionTakesTheSliceAndHoldsItThroughShortCalms(t *testing.T) {
	var c contention
	busy, calm := [2]float64{1, 0.1}, [2]float64{0.05, 0}
	look := func(l [2]float64) bool { return c.observe(l[0], l[1]) }
	if look(calm) || look([2]float64{1, 1}) || look([2]float64{0.2, 0}) {
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
	for range calmLooks - 1 {
		look(calm)
	}
	if look(calm) {
		t.Fatalf("kept the slice after %d calm looks in a row", calmLooks)
	}
}

func TestLoadIsOthersTimeInCPUs(t *testing.T) {
	prev := hostTimes{busy: 1000, idle: 500, own: 300, cpus: 2}
	// 200 ticks passed on 2 CPUs (100 each): 150 busy, 60 of them ours.
	other, idle := hostTimes{busy: 1150, idle: 550, own: 360, cpus: 2}.load(prev)
	if !near(other, 0.9) || !near(idle, 0.5) {
		t.Errorf("load = %v other, %v idle; want 0.9 and 0.5 CPUs", other, idle)
	}
	// Ours counted above what was busy (a tick's rounding): nobody else.
	if other, _ := (hostTimes{busy: 1150, idle: 550, own: 460, cpus: 2}).load(prev); other != 0 {
		t.Errorf("other = %v, want 0", other)
	}
	for _, cur := range []hostTimes{prev, {busy: 1150, idle: 550, own: 360, cpus: 1}} {
		if other, idle := cur.load(prev); other != 0 || idle != 0 {
			t.Errorf("%+v: no time passed or the CPUs changed, got %v, %v", cur, other, idle)
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
	self := []int{os.Getpid()}
	ticks := func(pid int) uint64 {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		return st.UTime + st.STime
	}
	window := func() (hostTimes, hostTimes) {
		a, err := readHostTimes(cpus, self)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		b, err := readHostTimes(cpus, self)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}

	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	before := ticks(child.Process.Pid)
	a, b := window()
	spun := ticks(child.Process.Pid) - before
	if spun < 10 || b.own-a.own < spun {
		t.Errorf("own loop: own time grew %d ticks, the loop spun %d", b.own-a.own, spun)
	}
	ownBefore := b.own
	child.Process.Kill()
	child.Wait()
	if after, _ := readHostTimes(cpus, self); after.own < ownBefore {
		t.Errorf("a reaped child's time left the count: %d then %d", ownBefore, after.own)
	}

	out, err := exec.Command("sh", "-c", "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	other, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p, err := os.FindProcess(other); err == nil {
			p.Kill()
		}
	}()
	before = ticks(other)
	a, b = window()
	spun = ticks(other) - before
	if spun < 10 || b.own-a.own >= spun {
		t.Errorf("another program's loop: own time grew %d ticks, the loop spun %d", b.own-a.own, spun)
	}
	if others := (b.busy - a.busy) - (b.own - a.own); others+5 < spun {
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
