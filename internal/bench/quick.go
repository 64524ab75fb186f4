package bench

import (
	"maps"
	"slices"
	"time"
)

// Clone returns a deep copy, so a run can adjust it freely.
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.Groups = slices.Clone(s.Groups)
	c.Variants = slices.Clone(s.Variants)
	for i := range c.Variants {
		c.Variants[i].Args = slices.Clone(s.Variants[i].Args)
		c.Variants[i].Env = slices.Clone(s.Variants[i].Env)
		c.Variants[i].Clients = maps.Clone(s.Variants[i].Clients)
	}
	c.Targets = slices.Clone(s.Targets)
	c.Postgres = maps.Clone(s.Postgres)
	return &c
}

// Quick returns a shortened copy for CI and smoke tests: one repetition, at
// most 2,000 records, and every time span and operation count cut to a
// quarter. The figures then only show that everything works, not how well.
func (s *Scenario) Quick() *Scenario {
	const factor = 4
	c := s.Clone()
	c.Repeat = 1
	c.Records = min(c.Records, 2000)
	c.Warmup /= factor
	c.MeasureFrom /= factor
	c.Period = max(c.Period/factor, Duration(time.Second))
	c.MaxRunTime = min(c.MaxRunTime, Duration(time.Minute))
	floor := func(d Duration) Duration {
		if d == 0 {
			return 0
		}
		return max(d/factor, Duration(500*time.Millisecond))
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		g.StartAfter /= factor
		g.Duration = floor(g.Duration)
		g.AfterOthers = floor(g.AfterOthers)
		if g.Ops > 0 {
			g.Ops = max(g.Ops/factor, min(g.Ops, 20))
		}
	}
	return c
}
