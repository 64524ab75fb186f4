package main

import (
	"runtime"

	"tierdb/internal/bench/rig"
)

// machine describes where the benchmark ran, for the report.
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	// LoadAvg is /proc/loadavg when the benchmark started: the machine is
	// shared, and other work on it skews the figures.
	LoadAvg string `json:"loadavg_at_start"`
}

func describeMachine() machine {
	m := rig.DescribeMachine()
	if m.CPUs == 0 {
		m.CPUs = runtime.NumCPU()
	}
	return machine{CPUs: m.CPUs, CPUModel: m.CPUModel, Kernel: m.Kernel, Go: m.Go, LoadAvg: m.LoadAvg}
}
