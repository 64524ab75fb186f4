package qos

import (
	"context"
	"testing"
	"time"
)

// The controller doubles the weight of a user missing its objective, up to
// its top, where it reports the objective unmeetable; and gives share back
// while the p99.9 is under half the objective.
func TestSLOFeedback(t *testing.T) {
	s := &sloState{objective: 20 * time.Millisecond, scale: 1}
	fill := func(d time.Duration) {
		for range 2000 {
			s.add(d)
		}
	}
	fill(30 * time.Millisecond)
	s.adjust()
	if s.met || s.scale != 2 || s.p999 != 30*time.Millisecond {
		t.Fatalf("missed: met %v scale %v p999 %v; want a doubled weight", s.met, s.scale, s.p999)
	}
	for range 10 {
		fill(30 * time.Millisecond)
		s.adjust()
	}
	if s.scale != sloMaxScale || !s.unmeetable {
		t.Fatalf("scale %v unmeetable %v; want the top and unmeetable", s.scale, s.unmeetable)
	}
	fill(5 * time.Millisecond)
	s.adjust()
	if !s.met || s.unmeetable || s.scale != sloMaxScale*0.8 {
		t.Fatalf("comfortable: met %v scale %v; want the weight cut by a fifth", s.met, s.scale)
	}
	fill(15 * time.Millisecond) // met, not under half: hold
	scale := s.scale
	s.adjust()
	if s.scale != scale {
		t.Fatalf("scale moved from %v to %v while the objective was just met", scale, s.scale)
	}
	// One slow request in a thousand is the p99.9.
	for i := range 1000 {
		d := time.Millisecond
		if i == 0 {
			d = time.Second
		}
		s.add(d)
	}
	s.adjust()
	if s.p999 != time.Second {
		t.Fatalf("p99.9 of 1000 with one slow = %v, want 1s", s.p999)
	}
}

// Through the gate: a user's objective scales the weight its requests get,
// and objectives no request carries any more are forgotten.
func TestGateSLOScalesWeight(t *testing.T) {
	g, clk := newTestGate(t, GateOptions{Parallelism: 4})
	p := Principal{User: "ls", Weight: 1, SLO: time.Millisecond}
	for range 50 {
		done, _ := g.Admit(context.Background(), Normal, p)
		clk.Advance(2 * time.Millisecond)
		done()
	}
	g.AdjustSLOs()
	st := g.SLOs()
	if len(st) != 1 || st[0].Met || st[0].Scale != 2 {
		t.Fatalf("SLOs %+v; want ls missing with scale 2", st)
	}
	done, _ := g.Admit(context.Background(), Normal, p)
	done()
	if w := g.Stats().Tiers[Normal].Users[0].Weight; w != 2 {
		t.Fatalf("weight %v, want 2 (1 scaled by 2)", w)
	}
	// No more requests: the user's entry goes at a window's end, then the
	// objective at the next period.
	g.AdjustSLOs()
	g.mu.Lock()
	delete(g.tiers[Normal].users, "ls")
	g.mu.Unlock()
	g.AdjustSLOs()
	if len(g.SLOs()) != 0 {
		t.Fatal("an objective nobody carries was kept")
	}
}
