package rig

import (
	"os"
	"runtime"
	"strings"

	"tierdb/internal/osprio"
)

// Machine describes where a benchmark ran. The programs copy it into their
// own reports, whose field names differ.
type Machine struct {
	// CPUs counts the machine's online CPUs, unlike runtime.NumCPU, which
	// only counts those this (possibly pinned) process may use; 0 if
	// unknown.
	CPUs     int
	CPUModel string
	Kernel   string
	Go       string
	// LoadAvg is /proc/loadavg now: the machine may be shared, and other
	// work on it skews the figures.
	LoadAvg string
}

// DescribeMachine reads the machine's description; what it cannot read
// stays empty.
func DescribeMachine() Machine {
	m := Machine{Go: runtime.Version(), LoadAvg: ReadLoadAvg()}
	if online, err := osprio.OnlineCPUs(); err == nil {
		m.CPUs = len(online)
	}
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
	return m
}

// ReadLoadAvg returns /proc/loadavg, or "" if it cannot be read.
func ReadLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
