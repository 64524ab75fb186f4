package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupV1CPU is where cgroup v1 mounts its cpu controller.
const cgroupV1CPU = "/sys/fs/cgroup/cpu"

// cfsPeriod is the quota's accounting period in µs (the kernel's default).
const cfsPeriod = 100_000

// nodeCFSPeriod is the accounting period of the per-node quotas of a replica
// set, in µs. A machine with a fraction of a CPU runs steadily, not at full
// speed for part of every 100 ms and stopped for the rest: with the default
// period a node capped at 0.25 CPU would stall for 75 ms at a time, which
// swamps the read latencies that routing decisions compare. 10 ms keeps the
// stalls short, at some more accounting work.
const nodeCFSPeriod = 10_000

// cpuQuota is a cgroup v1 cpu group, capping its processes at a share of
// CPU time (quota/period CPUs over every period) unless made by
// newCPUGroup.
type cpuQuota struct {
	dir    string
	kernel bool // a real cgroup, not a test's stand-in directory
}

// newCPUQuota creates the group root/name capped at cpus CPUs. root is
// normally cgroupV1CPU; tests pass a directory of their own.
func newCPUQuota(root, name string, cpus float64) (*cpuQuota, error) {
	return newCPUQuotaPeriod(root, name, cpus, cfsPeriod)
}

// newCPUQuotaPeriod is newCPUQuota with an accounting period of period µs.
func newCPUQuotaPeriod(root, name string, cpus float64, period int64) (*cpuQuota, error) {
	if cpus <= 0 {
		return nil, fmt.Errorf("a CPU quota must be positive, got %g", cpus)
	}
	q, err := newCPUGroup(root, name)
	if err != nil {
		return nil, fmt.Errorf("--pg-cpu-quota: %w", err)
	}
	quota := int64(cpus * float64(period))
	// The kernel refuses quotas below 1 ms.
	quota = max(quota, 1000)
	for _, f := range []struct {
		name  string
		value int64
	}{{"cpu.cfs_period_us", period}, {"cpu.cfs_quota_us", quota}} {
		if err := q.write(f.name, strconv.FormatInt(f.value, 10)); err != nil {
			_ = q.remove()
			return nil, fmt.Errorf("--pg-cpu-quota: %w", err)
		}
	}
	return q, nil
}

// newCPUGroup creates the group root/name without a quota: its processes
// share the CPU with the rest of the machine as one group, at the default
// weight.
func newCPUGroup(root, name string) (*cpuQuota, error) {
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("this needs the cgroup v1 cpu controller at %s (cgroup v2 is not supported): %w", root, err)
	}
	q := &cpuQuota{dir: filepath.Join(root, name), kernel: root == cgroupV1CPU}
	if err := os.Mkdir(q.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create cgroup %s (run as root, with %s writable): %w", q.dir, root, err)
	}
	return q, nil
}

func (q *cpuQuota) write(name, value string) error {
	// Cgroup files must be written in one write(2), and never created: a
	// missing file means a missing controller. A test's stand-in directory
	// starts empty.
	flags := os.O_WRONLY | os.O_TRUNC
	if !q.kernel {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(filepath.Join(q.dir, name), flags, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	return errors.Join(err, f.Close())
}

// add moves processes (all their threads) into the group; children they
// fork later are born in it.
func (q *cpuQuota) add(pids ...int) error {
	for _, pid := range pids {
		if err := q.write("cgroup.procs", strconv.Itoa(pid)); err != nil {
			if _, gone := os.Stat(fmt.Sprintf("/proc/%d", pid)); gone != nil {
				continue
			}
			return fmt.Errorf("moving process %d into %s: %w", pid, q.dir, err)
		}
	}
	return nil
}

// contains reports whether pid is in the group, per /proc/PID/cgroup.
func (q *cpuQuota) contains(pid int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false, err
	}
	rel := "/" + filepath.Base(q.dir)
	for line := range strings.SplitSeq(string(b), "\n") {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && hasController(parts[1], "cpu") && strings.HasSuffix(parts[2], rel) {
			return true, nil
		}
	}
	return false, nil
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// remove deletes the group; the kernel refuses while processes remain in
// it, so call it after they have exited.
func (q *cpuQuota) remove() error {
	err := os.Remove(q.dir)
	if err == nil || os.IsNotExist(err) {
		return nil
	}
	if !q.kernel {
		// A test's stand-in directory holds real files.
		return os.RemoveAll(q.dir)
	}
	return fmt.Errorf("removing cgroup %s: %w", q.dir, err)
}
