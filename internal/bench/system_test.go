package bench

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tierdb/internal/bench/rig"
	"tierdb/internal/osprio"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP tierdb_request_duration_seconds Request duration including admission wait, by tier.
tierdb_request_duration_seconds_bucket{tier="high",le="0.001"} 3
tierdb_request_duration_seconds_sum{tier="high"} 0.004
tierdb_request_duration_seconds_count{tier="high"} 4
tierdb_request_duration_seconds_sum{tier="low"} 0
tierdb_request_duration_seconds_count{tier="low"} 0
tierdb_connections 3
go_gc_duration_seconds{quantile="0"} 1.2e-05
go_gc_duration_seconds_sum 0.0042
go_gc_duration_seconds_count 17
go_memstats_alloc_bytes 1.2e+07
go_memstats_alloc_bytes_total 9.87654321e+08
`
	m, err := parseMetrics(bufio.NewScanner(strings.NewReader(text)))
	if err != nil {
		t.Fatal(err)
	}
	got := m.Tiers
	if len(got) != 1 || got["high"].Count != 4 || got["high"].MeanUs != 1000 {
		t.Errorf("got %+v", got)
	}
	if m.GCs != 17 || m.AllocBytes != 987654321 {
		t.Errorf("runtime counters: %d collections, %.0f bytes", m.GCs, m.AllocBytes)
	}
}

func TestMixPickProportions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := Mix{Read: 1, Update: 2, Scan: 1}
	var n [4]int
	for range 40_000 {
		n[m.pick(rng)]++
	}
	if n[opInsert] != 0 {
		t.Errorf("%d inserts with no insert in the mix", n[opInsert])
	}
	for op, want := range map[opKind]int{opRead: 10_000, opUpdate: 20_000, opScan: 10_000} {
		if d := n[op] - want; d < -600 || d > 600 {
			t.Errorf("op %d drawn %d times, want about %d", op, n[op], want)
		}
	}
}

func TestZipfianKeysAreSkewedAndInRange(t *testing.T) {
	const n = 1000
	z := newZipfianKeys(n)
	rng := rand.New(rand.NewPCG(5, 6))
	counts := map[int64]int{}
	for range 100_000 {
		k := z.next(rng)
		if k < 0 || k >= n {
			t.Fatalf("key %d out of range", k)
		}
		counts[k]++
	}
	// With constant 0.99 over 1000 keys the most popular key takes about
	// 1/H(1000) ≈ 13% of the draws; uniform keys would give 0.1% each.
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	if top < 8_000 || top > 20_000 {
		t.Errorf("most popular key drawn %d times of 100000", top)
	}
	u := uniformKeys{n: n}
	for range 1000 {
		if k := u.next(rng); k < 0 || k >= n {
			t.Fatalf("uniform key %d out of range", k)
		}
	}
	if z1 := newZipfianKeys(1); z1.next(rng) != 0 {
		t.Error("one record: key 0")
	}
}

func TestPlanLayout(t *testing.T) {
	avail, err := osprio.Affinity(os.Getpid())
	if err != nil {
		t.Skip(err)
	}
	shared, err := planLayout(LayoutOptions{Mode: LayoutShared})
	if err != nil {
		t.Fatal(err)
	}
	if len(shared.ServerCPUs) != len(avail) || len(shared.LoadCPUs) != len(avail) {
		t.Errorf("shared: %+v", shared)
	}
	if _, err := planLayout(LayoutOptions{Mode: "diagonal"}); err == nil {
		t.Error("an unknown layout was accepted")
	}
	if _, err := planLayout(LayoutOptions{Mode: LayoutShared, ServerCPUs: "0"}); err == nil {
		t.Error("--server-cpus with the shared layout was accepted")
	}
	if len(avail) < 2 {
		if _, err := planLayout(LayoutOptions{}); err == nil || !strings.Contains(err.Error(), "shared") {
			t.Errorf("split on one CPU: %v", err)
		}
		return
	}
	split, err := planLayout(LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if split.Mode != LayoutSplit || len(split.ServerCPUs) == 0 || len(split.LoadCPUs) == 0 ||
		len(split.ServerCPUs)+len(split.LoadCPUs) != len(avail) {
		t.Errorf("split: %+v", split)
	}
	if split.ServerCPUs[len(split.ServerCPUs)-1] != avail[len(avail)-1] {
		t.Errorf("the server side gets the last CPUs: %+v", split)
	}
	if _, err := planLayout(LayoutOptions{ServerCPUs: "9999"}); err == nil {
		t.Error("an unavailable server CPU was accepted")
	}
}

func TestCPUQuotaFiles(t *testing.T) {
	// A stand-in directory with the files cgroup v1 has.
	root := t.TempDir()
	for _, f := range []string{"cpu.cfs_quota_us"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err := newCPUQuota(root, "g", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"} {
		b, _ := os.ReadFile(filepath.Join(root, "g", f))
		if string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	if err := q.add(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "g", "cgroup.procs")); strings.TrimSpace(string(b)) == "" {
		t.Error("the PID was not written to cgroup.procs")
	}
	if err := q.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "g")); !os.IsNotExist(err) {
		t.Error("the group directory is still there")
	}
	if _, err := newCPUQuota(t.TempDir(), "g", 0.5); err == nil || !strings.Contains(err.Error(), "cgroup v1") {
		t.Errorf("a missing controller: %v", err)
	}
	if _, err := newCPUQuota(root, "h", 0); err == nil {
		t.Error("a zero quota was accepted")
	}
}

// TestCPUQuotaKernel moves a process into a real cgroup with a quota, when
// this machine has a writable cgroup v1 cpu controller.
func TestCPUQuotaKernel(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and cgroup v1's cpu controller at " + cgroupV1CPU)
	}
	q, err := newCPUQuota(cgroupV1CPU, "tierdb-bench-test-"+strings.ReplaceAll(t.Name(), "/", "-"), 0.25)
	if err != nil {
		t.Skip(err)
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sleep.Process.Kill()
		sleep.Wait()
		if err := q.remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := q.add(sleep.Process.Pid); err != nil {
		t.Fatal(err)
	}
	in, err := q.contains(sleep.Process.Pid)
	if err != nil || !in {
		t.Errorf("the process is not in the group: %v", err)
	}
	if in, _ := q.contains(os.Getpid()); in {
		t.Error("the test itself was moved")
	}
	b, _ := os.ReadFile(filepath.Join(q.dir, "cpu.cfs_quota_us"))
	if strings.TrimSpace(string(b)) != "25000" {
		t.Errorf("quota %q", b)
	}
}

// TestServerGroupKernel moves a process tree into a real cgroup without a
// quota (--server-cgroup), when this machine has a writable cgroup v1 cpu
// controller: the parent and the child it had already forked are both in
// it, and the group caps nothing.
func TestServerGroupKernel(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and cgroup v1's cpu controller at " + cgroupV1CPU)
	}
	g, err := newCPUGroup(cgroupV1CPU, "tierdb-bench-test-"+t.Name())
	if err != nil {
		t.Skip(err)
	}
	sh := exec.Command("sh", "-c", "sleep 30 & echo started; wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		sh.Wait()
		// The orphaned sleep leaves the group once the kernel has killed it.
		err := g.remove()
		for i := 0; err != nil && i < 100; i++ {
			time.Sleep(10 * time.Millisecond)
			err = g.remove()
		}
		if err != nil {
			t.Error(err)
		}
	}()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := moveTree(g, sh.Process.Pid); err != nil {
		t.Fatal(err)
	}
	tree, err := rig.ProcessTree(sh.Process.Pid)
	if err != nil || len(tree) < 2 {
		t.Fatalf("process tree %v: %v", tree, err)
	}
	for _, p := range tree {
		if in, err := g.contains(p.PID); err != nil || !in {
			t.Errorf("process %d is not in the group: %v", p.PID, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(g.dir, "cpu.cfs_quota_us"))
	if strings.TrimSpace(string(b)) != "-1" {
		t.Errorf("quota %q, want none", b)
	}
}

func TestServerCgroupLayout(t *testing.T) {
	if _, err := planLayout(LayoutOptions{Mode: LayoutShared, ServerCgroup: true, PGCPUQuota: 0.5}); err == nil {
		t.Error("--server-cgroup with --pg-cpu-quota was accepted")
	}
	l, err := planLayout(LayoutOptions{Mode: LayoutShared, ServerCgroup: true})
	if err != nil || !l.ServerCgroup || !strings.Contains(l.Text, "one cgroup v1 cpu group") {
		t.Errorf("layout %+v: %v", l, err)
	}
}
