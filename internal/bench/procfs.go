package bench

import (
	"tierdb/internal/bench/rig"
)

// processCPU is the CPU seconds pid itself has used.
func processCPU(pid int) float64 {
	st, err := rig.ReadProcStat(pid)
	if err != nil {
		return 0
	}
	return st.CPU().Seconds()
}

// treeCPU is the CPU seconds used by root and all its descendants, living
// or reaped (a reaped child's time moves into its parent's cutime/cstime).
func treeCPU(root int) float64 {
	tree, _ := rig.ProcessTree(root)
	var total float64
	for _, p := range tree {
		total += p.CPUWithChildren().Seconds()
	}
	return total
}

// cpuShares returns busy, steal and iowait percentages of cpus between two
// readings.
func cpuShares(a, b map[int]rig.CPUTimes, cpus []int) (busy, steal, iowait float64) {
	var d rig.CPUTimes
	for _, c := range cpus {
		d.Busy += b[c].Busy - a[c].Busy
		d.Idle += b[c].Idle - a[c].Idle
		d.IOWait += b[c].IOWait - a[c].IOWait
		d.Steal += b[c].Steal - a[c].Steal
	}
	total := float64(d.Total())
	if total == 0 {
		return 0, 0, 0
	}
	return 100 * float64(d.Busy) / total, 100 * float64(d.Steal) / total, 100 * float64(d.IOWait) / total
}
