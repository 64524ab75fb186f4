package main

import (
	"os"
	"runtime"
	"strings"
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
	m := machine{CPUs: onlineCPUs(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	return m
}

// onlineCPUs counts the machine's CPUs, unlike runtime.NumCPU, which only
// counts those this (possibly pinned) process may use.
func onlineCPUs() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	return max(n, 1)
}
