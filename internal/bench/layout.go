package bench

import (
	"fmt"
	"os"
	"slices"

	"tierdb/internal/osprio"
)

// Layout modes.
const (
	LayoutSplit  = "split"  // server side and load generator on disjoint CPUs
	LayoutShared = "shared" // everything on every CPU
)

// LayoutOptions choose where the processes run.
type LayoutOptions struct {
	Mode string // split (default) or shared
	// ServerCPUs overrides the split: a CPU list such as "2-3"; the load
	// generator gets the other CPUs this process may use.
	ServerCPUs string
	// PGCPUQuota caps PostgreSQL (all its processes) at this many CPUs with
	// a cgroup v1 CPU quota; 0 means no cap.
	PGCPUQuota float64
	// ServerCgroup puts PostgreSQL and tierdb in one cgroup v1 cpu group
	// of their own, without a quota, as systemd with CPU accounting or a
	// container would: the kernel's autogroups do not apply there, so the
	// processes inside are weighed by their nice levels.
	ServerCgroup bool
	// Nodes is how many PostgreSQL nodes run (the primary and its
	// standbys); set by Run from the scenario. With a quota each node gets
	// its own cgroup with it.
	Nodes int
}

// planLayout decides the CPUs of each side. In the split layout the server
// side gets the last half of the CPUs this process may use (at least one),
// the load generator the rest.
func planLayout(o LayoutOptions) (Layout, error) {
	avail, err := osprio.Affinity(os.Getpid())
	if err != nil {
		return Layout{}, err
	}
	if o.Mode == "" {
		o.Mode = LayoutSplit
	}
	l := Layout{Mode: o.Mode, PGCPUQuota: o.PGCPUQuota, ServerCgroup: o.ServerCgroup, Nodes: max(o.Nodes, 1)}
	if o.PGCPUQuota < 0 {
		return l, fmt.Errorf("--pg-cpu-quota must be positive, got %g", o.PGCPUQuota)
	}
	if o.PGCPUQuota > 0 && o.ServerCgroup {
		return l, fmt.Errorf("--server-cgroup and --pg-cpu-quota do not combine: each makes cgroups of its own")
	}
	switch o.Mode {
	case LayoutShared:
		if o.ServerCPUs != "" {
			return l, fmt.Errorf("--server-cpus needs --layout %s", LayoutSplit)
		}
		l.ServerCPUs, l.LoadCPUs = avail, avail
		l.Text = fmt.Sprintf("shared: load generator, tierdb and PostgreSQL all on CPUs %s", osprio.CPUSet(avail))
	case LayoutSplit:
		if len(avail) < 2 {
			return l, fmt.Errorf("the split layout needs two CPUs and this process may use %d (%s); use --layout %s", len(avail), osprio.CPUSet(avail), LayoutShared)
		}
		if o.ServerCPUs != "" {
			set, err := osprio.ParseCPUList(o.ServerCPUs)
			if err != nil {
				return l, fmt.Errorf("--server-cpus: %w", err)
			}
			for _, c := range set {
				if !slices.Contains(avail, c) {
					return l, fmt.Errorf("--server-cpus: CPU %d is not available to this process (%s)", c, osprio.CPUSet(avail))
				}
			}
			l.ServerCPUs = set
			for _, c := range avail {
				if !slices.Contains(set, c) {
					l.LoadCPUs = append(l.LoadCPUs, c)
				}
			}
			if len(l.LoadCPUs) == 0 {
				return l, fmt.Errorf("--server-cpus %s leaves no CPU for the load generator", o.ServerCPUs)
			}
		} else {
			k := max(1, len(avail)/2)
			l.LoadCPUs, l.ServerCPUs = avail[:len(avail)-k], avail[len(avail)-k:]
		}
		l.Text = fmt.Sprintf("split: PostgreSQL (postmaster, its processes and every backend it forks) and tierdb on CPU %s; load generator on CPU %s (GOMAXPROCS=%d)",
			osprio.CPUSet(l.ServerCPUs), osprio.CPUSet(l.LoadCPUs), len(l.LoadCPUs))
	default:
		return l, fmt.Errorf("--layout must be %s or %s, got %q", LayoutSplit, LayoutShared, o.Mode)
	}
	if l.Nodes > 1 {
		plural := "s"
		if l.Nodes == 2 {
			plural = ""
		}
		l.Text += fmt.Sprintf("; PostgreSQL is %d nodes (a primary and %d hot standby%s, each its own postmaster) on those CPUs", l.Nodes, l.Nodes-1, plural)
	}
	switch {
	case o.PGCPUQuota > 0 && l.Nodes > 1:
		l.Text += fmt.Sprintf("; each node in its own cgroup v1 cpu group capped at %g CPU (10 ms CFS period; equal-capacity nodes emulated on one machine: %g CPU of PostgreSQL in all)", o.PGCPUQuota, o.PGCPUQuota*float64(l.Nodes))
	case o.PGCPUQuota > 0:
		l.Text += fmt.Sprintf("; PostgreSQL capped at %g CPU by a cgroup quota", o.PGCPUQuota)
	case o.ServerCgroup:
		l.Text += "; PostgreSQL and tierdb in one cgroup v1 cpu group of their own, no quota (as under systemd with CPU accounting, or in a container): nice levels rank their processes, the kernel's autogroups do not apply"
	case l.Nodes > 1:
		l.Text += "; no CPU quota: the nodes share the server CPUs freely, so routing reads to standbys adds no capacity"
	}
	return l, nil
}
