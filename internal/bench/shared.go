package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"tierdb/internal/bench/rig"
)

// What both of tierdb-bench's experiments share (the scenarios here and
// `tierdb-bench baseline`, package internal/bench/baseline): how they find
// the tierdb to measure, how they describe the machine, and the pieces of
// their Markdown reports, so that the two read alike.

// DescribeMachine describes the machine for a report; LoadAvgEnd is for
// the caller to fill in when the measurements end.
func DescribeMachine() Machine {
	m := rig.DescribeMachine()
	return Machine{NProc: m.CPUs, CPUModel: m.CPUModel, Kernel: m.Kernel, Go: m.Go, LoadAvgStart: m.LoadAvg}
}

// MachineMarkdown is a report's "Machine and layout" section: the machine,
// the PostgreSQL and tierdb versions, where the processes ran and the load
// average around the measurements.
func MachineMarkdown(m Machine, postgres, tierdb, layout string) string {
	var b strings.Builder
	b.WriteString("## Machine and layout\n\n")
	fmt.Fprintf(&b, "- %d CPUs (nproc), CPU model \"%s\", Linux %s, %s\n", m.NProc, m.CPUModel, m.Kernel, m.Go)
	fmt.Fprintf(&b, "- PostgreSQL %s, %s\n", postgres, tierdb)
	fmt.Fprintf(&b, "- Layout: %s\n", layout)
	fmt.Fprintf(&b, "- Load average at the start: %s; at the end: %s. The machine may be shared with other work, which no pinning keeps off the server CPUs; the steal and busy columns below show how much.\n\n", m.LoadAvgStart, m.LoadAvgEnd)
	return b.String()
}

// TargetRow is one acceptance target's line in a report.
type TargetRow struct {
	Name, Variant, Measured, Limit string
	Pass                           bool
	// Missing, when set, says why the target could not be checked.
	Missing string
}

// TargetsMarkdown is a report's "Acceptance targets" section; empty for
// no rows.
func TargetsMarkdown(rows []TargetRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Acceptance targets\n\n| target | variant | measured | limit | result |\n|---|---|---|--:|:-:|\n")
	for _, t := range rows {
		verdict := "MISS"
		if t.Pass {
			verdict = "PASS"
		}
		measured := t.Measured
		if t.Missing != "" {
			measured, verdict = t.Missing, "MISS (no data)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | **%s** |\n", t.Name, t.Variant, measured, t.Limit, verdict)
	}
	b.WriteString("\n")
	return b.String()
}

// FormatMicros prints a latency given in µs as the reports do: in µs below
// 10 ms, else in ms.
func FormatMicros(us float64) string { return fmtMicros(us) }

// TierdbVersion is the first line `bin version` prints, or "unknown".
func TierdbVersion(bin string) string {
	first, _, _ := strings.Cut(tierdbVersion(bin), "\n")
	return strings.TrimSpace(first)
}

// CommandLine renders a command and its arguments the way a shell would
// accept them back, for a report.
func CommandLine(prefix string, args []string) string {
	parts := []string{prefix}
	for _, a := range args {
		parts = append(parts, ShellQuote(a))
	}
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:,+@%-]+$`)

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FindTierdb is the tierdb executable the servers are started from, as an
// absolute path checked to exist: bin when given, else the tierdb next to
// the running executable (bin/tierdb beside bin/tierdb-bench, as `make
// build` leaves them), else ./bin/tierdb, else tierdb on $PATH.
func FindTierdb(bin string) (string, error) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("tierdb binary: %w", err)
		}
		return abs, nil
	}
	var candidates []string
	if self, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(self), "tierdb"))
	}
	candidates = append(candidates, filepath.Join("bin", "tierdb"))
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return filepath.Abs(c)
		}
	}
	if p, err := exec.LookPath("tierdb"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("no tierdb binary next to this one, in ./bin or on $PATH: run `make build`, or pass --tierdb")
}
