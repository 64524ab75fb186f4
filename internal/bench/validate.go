package bench

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Validate reports every problem it finds, one per line.
func (s *Scenario) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	if !nameRE.MatchString(s.Name) {
		bad("name %q: want letters, digits, '-', '_' or '.'", s.Name)
	}
	if s.Records < 1 {
		bad("records must be at least 1")
	}
	if s.FieldCount < 1 || s.FieldCount > 100 {
		bad("fieldCount must be 1…100, got %d", s.FieldCount)
	}
	if s.FieldLength < 1 || s.FieldLength > 1<<20 {
		bad("fieldLength must be 1…1048576, got %d", s.FieldLength)
	}
	if s.Distribution != "zipfian" && s.Distribution != "uniform" {
		bad("distribution must be zipfian or uniform, got %q", s.Distribution)
	}
	if s.ScanLength < 1 {
		bad("scanLength must be at least 1")
	}
	if s.Warmup < 0 || s.MeasureFrom < 0 || s.MaxRunTime <= 0 {
		bad("warmup and measureFrom must be ≥ 0 and maxRunTime > 0")
	}
	if s.Repeat < 1 {
		bad("repeat must be at least 1")
	}
	if s.Replicas < 0 || s.Replicas > 8 {
		bad("replicas must be 0…8, got %d", s.Replicas)
	}
	if s.PGCPUQuota < 0 {
		bad("pgCPUQuota cannot be negative")
	}
	if s.Layout != "" && s.Layout != LayoutSplit && s.Layout != LayoutShared {
		bad("layout must be %s or %s, got %q", LayoutSplit, LayoutShared, s.Layout)
	}
	if s.Period < Duration(100e6) {
		bad("period must be at least 100ms, got %s", s.Period)
	}
	if len(s.Groups) == 0 {
		bad("groups: at least one group is needed")
	}
	seen := map[string]bool{}
	bounded := 0
	for i, g := range s.Groups {
		where := fmt.Sprintf("groups[%d] (%s)", i, g.Name)
		if !nameRE.MatchString(g.Name) {
			bad("groups[%d]: name %q: want letters, digits, '-', '_' or '.'", i, g.Name)
		} else if seen[g.Name] {
			bad("%s: the name is used twice", where)
		}
		seen[g.Name] = true
		if g.Duration > 0 && s.MeasureFrom >= g.Duration {
			bad("%s: measureFrom (%s) leaves nothing of its duration (%s) to measure", where, s.MeasureFrom, g.Duration)
		}
		errs = append(errs, g.validate(where)...)
		if g.ReadPreference != nil && s.Replicas == 0 {
			bad("%s: readPreference needs replicas", where)
		}
		if g.AfterOthers == 0 {
			bounded++
		}
	}
	if len(s.Groups) > 0 && bounded == 0 {
		bad("groups: every group runs afterOthers; at least one needs duration or ops")
	}
	if len(s.Variants) == 0 {
		bad("variants: at least one variant is needed")
	}
	seen = map[string]bool{"baseline": true}
	for i, v := range s.Variants {
		where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
		if !nameRE.MatchString(v.Name) {
			bad("variants[%d]: name %q: want letters, digits, '-', '_' or '.'", i, v.Name)
		} else if seen[v.Name] {
			bad("%s: the name is used twice (\"baseline\" is reserved)", where)
		}
		seen[v.Name] = true
		errs = append(errs, v.validate(where)...)
		if v.ReadPreference != nil && s.Replicas == 0 {
			bad("%s: readPreference needs replicas", where)
		}
		for name, n := range v.Clients {
			if _, ok := s.Group(name); !ok {
				bad("%s: clients: %q is not a group", where, name)
			} else if n < 1 {
				bad("%s: clients of %s must be at least 1", where, name)
			}
		}
	}
	if s.Reference != "" {
		if _, ok := s.Variant(s.Reference); !ok {
			bad("reference %q is not a variant", s.Reference)
		}
	}
	if s.BaselineOn() && len(s.groupsWithRole(RoleTimeSensitive)) == 0 {
		bad("baseline: there is no time-sensitive group to run alone")
	}
	for i, t := range s.Targets {
		errs = append(errs, t.validate(fmt.Sprintf("targets[%d]", i), s)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("scenario %q is invalid:\n  %s", s.Name, strings.Join(errs, "\n  "))
	}
	return nil
}

func (g Group) validate(where string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, where+": "+fmt.Sprintf(format, args...)) }
	if g.Clients.Expr == "" {
		bad("clients is required")
	} else if !g.Clients.dependsOnCPUs() && g.Clients.Resolve(0) < 1 {
		bad("clients must be at least 1")
	}
	switch g.Tier {
	case "high", "normal", "low":
	default:
		bad("tier must be high, normal or low, got %q", g.Tier)
	}
	if g.Role != RoleTimeSensitive && g.Role != RoleNoise {
		bad("role must be %s or %s, got %q", RoleTimeSensitive, RoleNoise, g.Role)
	}
	m := g.Mix
	switch g.Kind {
	case KindYCSB:
		if m.Read < 0 || m.Update < 0 || m.Insert < 0 || m.Scan < 0 || m.total() <= 0 {
			bad("mix needs non-negative proportions of read, update, insert, scan, not all zero")
		}
		if g.WriteRate != 0 {
			bad("writeRate is only for kind %s", KindStaleness)
		}
	case KindStaleness:
		if m.total() != 0 {
			bad("kind %s has no mix: its writer updates and its clients read", KindStaleness)
		}
		if g.WriteRate < 0 || g.WriteRate > 1e6 {
			bad("writeRate must be in [0, 1e6] (0: back to back)")
		}
		if g.AfterOthers > 0 {
			bad("kind %s needs duration or ops", KindStaleness)
		}
	default:
		bad("kind must be %s or %s, got %q", KindYCSB, KindStaleness, g.Kind)
	}
	if rp := g.ReadPreference; rp != nil {
		errs = append(errs, rp.validate(where+": readPreference")...)
	}
	if g.Distribution != "" && g.Distribution != "zipfian" && g.Distribution != "uniform" {
		bad("distribution must be zipfian or uniform, got %q", g.Distribution)
	}
	switch g.Mode {
	case ModeClosed:
		if g.Rate != 0 {
			bad("rate is only for mode rate")
		}
	case ModeRate:
		if g.Rate <= 0 || g.Rate > 1e6 {
			bad("mode rate needs rate (operations per second per client) in (0, 1e6]")
		}
	default:
		bad("mode must be closed or rate, got %q", g.Mode)
	}
	if g.ConnectionsPerUser < 0 || g.Weight < 0 {
		bad("connectionsPerUser and weight cannot be negative")
	}
	if (g.Weight > 0 || g.SLO != nil) && g.ConnectionsPerUser == 0 {
		bad("weight and slo are per user: set connectionsPerUser")
	}
	if g.SLO != nil && g.SLO.P999Ms <= 0 {
		bad("slo.p999Ms must be positive")
	}
	if g.ConnectionsPerUser > 0 && g.Kind != KindYCSB {
		bad("connectionsPerUser is for kind %s groups", KindYCSB)
	}
	if g.StartAfter < 0 || g.Duration < 0 || g.Ops < 0 || g.AfterOthers < 0 {
		bad("startAfter, duration, ops and afterOthers cannot be negative")
	}
	ends := 0
	for _, set := range []bool{g.Duration > 0, g.Ops > 0, g.AfterOthers > 0} {
		if set {
			ends++
		}
	}
	if ends != 1 {
		bad("exactly one of duration, ops and afterOthers is needed, got %d", ends)
	}
	if wc := g.WriteConcern; wc != nil {
		switch w := wc.W.(type) {
		case nil:
		case int:
			if w < 0 {
				bad("writeConcern.w cannot be negative")
			}
		case string:
			if w != "majority" {
				bad("writeConcern.w must be a number or \"majority\", got %q", w)
			}
		default:
			bad("writeConcern.w must be a number or \"majority\"")
		}
	}
	return errs
}

func (v Variant) validate(where string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, where+": "+fmt.Sprintf(format, args...)) }
	switch v.QoS {
	case "on":
		if v.Threshold < 1 {
			bad("threshold must be at least 1")
		}
		if err := checkPools(v.CPUPools); err != nil {
			bad("cpuPools: %v", err)
		}
	case "off":
		if v.Threshold != 0 || v.CPUPools != "" || v.Nice != "" {
			bad("threshold, cpuPools and nice need qos: on")
		}
	default:
		bad("qos must be on or off, got %q", v.QoS)
	}
	for _, e := range v.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			bad("env: want NAME=value, got %q", e)
		}
	}
	if rp := v.ReadPreference; rp != nil {
		errs = append(errs, rp.validate(where+": readPreference")...)
	}
	if v.BackendsPerTier < 0 {
		bad("backendsPerTier cannot be negative")
	}
	for _, a := range v.Args {
		for _, owned := range []string{"--listen", "--postgres-url", "--data-dir", "--qos", "--threshold", "--cpu-pools", "--nice", "--backends-per-tier", "--standby-urls", "--replicas"} {
			if a == owned || strings.HasPrefix(a, owned+"=") {
				bad("args: %s is set by the harness or by a variant field", owned)
			}
		}
	}
	return errs
}

// checkPools checks the shape of a --cpu-pools value; tierdb itself checks
// the CPU numbers against the machine when it starts.
func checkPools(s string) error {
	if s == "" {
		return nil
	}
	cpuList := regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, list, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || (k != "priority" && k != "standard" && k != "restricted") {
			return fmt.Errorf("want priority=LIST;standard=LIST;restricted=LIST, got %q", part)
		}
		if !cpuList.MatchString(strings.TrimSpace(list)) {
			return fmt.Errorf("%s: %q is not a CPU list such as 0-1,3", k, list)
		}
	}
	return nil
}

func (rp *ReadPreference) validate(where string) []string {
	var errs []string
	if !slices.Contains(readModes, rp.Mode) {
		errs = append(errs, fmt.Sprintf("%s: mode must be one of %s, got %q", where, strings.Join(readModes, ", "), rp.Mode))
	}
	if rp.MaxStalenessMS < 0 {
		errs = append(errs, where+": maxStalenessMS cannot be negative")
	}
	if rp.Mode == "primary" && rp.MaxStalenessMS > 0 {
		errs = append(errs, where+": mode primary takes no staleness bound")
	}
	return errs
}
