package qos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// shadow is a model of Algorithms 2 and 3 rebuilt from the channel's events.
// It judges every admission against its own counts, not the channel's, so a
// channel that miscounts or admits too early is caught at the moment of the
// admission. All methods run under the channel's lock.
type shadow struct {
	thr            int
	high, normProc int
	running        [NumTiers]int
	waiting        [NumTiers]int
	passes         map[*waiter]bool
	guardAllowed   bool
	guardAdmits    int
	violations     []string
}

func (m *shadow) fail(format string, args ...any) {
	if len(m.violations) < 10 {
		m.violations = append(m.violations, fmt.Sprintf(format, args...))
	}
}

func (m *shadow) observe(ev event) {
	t := ev.tier
	switch ev.kind {
	case evThreshold:
		m.thr = ev.threshold
	case evQueue:
		m.waiting[t]++
		if t == Normal {
			m.normProc++
		}
	case evGuardPass:
		if !m.guardAllowed {
			m.fail("guard pass with the guard off")
		}
		m.passes[ev.w] = true
	case evAdmit:
		if ev.guard {
			if !m.passes[ev.w] {
				m.fail("%v admitted as a guard admission without a pass", t)
			}
			m.guardAdmits++
		} else {
			// The invariant of Algorithm 2, checked at the moment of
			// admission.
			switch t {
			case Normal:
				if m.high >= m.thr {
					m.fail("normal admitted with %d highs in process, threshold %d", m.high, m.thr)
				}
			case Low:
				if m.high+m.normProc >= m.thr {
					m.fail("low admitted with %d highs and %d normals in process, threshold %d", m.high, m.normProc, m.thr)
				}
			}
		}
		if ev.w != nil {
			m.waiting[t]--
			delete(m.passes, ev.w)
		} else if t == Normal {
			m.normProc++
		}
		if t == High {
			m.high++
		}
		m.running[t]++
	case evExit:
		m.running[t]--
		switch t {
		case High:
			m.high--
		case Normal:
			m.normProc--
		}
	case evAbandon:
		m.waiting[t]--
		delete(m.passes, ev.w)
		if t == Normal {
			m.normProc--
		}
	}
	if ev.kind != evSignal && ev.kind != evGuardPass && (m.high != ev.high || m.normProc != ev.normProc) {
		m.fail("after event %d: channel counts high %d norm_proc %d, model %d %d", ev.kind, ev.high, ev.normProc, m.high, m.normProc)
	}
	for tier := range NumTiers {
		if m.running[tier] < 0 || m.waiting[tier] < 0 {
			m.fail("%v count went negative: %d running, %d waiting", tier, m.running[tier], m.waiting[tier])
		}
	}
}

func TestStress(t *testing.T) {
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("guard=%v", guard), func(t *testing.T) {
			stress(t, guard)
		})
	}
}

func stress(t *testing.T, guard bool) {
	clk := newFakeClock()
	opts := ChannelOptions{Threshold: 2, Clock: clk}
	if guard {
		opts.StarvationGuard = time.Millisecond
	}
	c, err := NewChannel(opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &shadow{thr: 2, passes: map[*waiter]bool{}, guardAllowed: guard}
	c.hooks = &hooks{event: m.observe}

	const workers, perWorker = 12, 250
	stop := make(chan struct{})
	var background sync.WaitGroup
	// Threshold changes and guard ticks run alongside the requests.
	background.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.SetThreshold(1 + r.IntN(3)); err != nil {
				t.Error(err)
				return
			}
			if guard {
				clk.Advance(time.Millisecond)
			}
			runtime.Gosched()
		}
	})

	var wg sync.WaitGroup
	var mu sync.Mutex
	var admitted, cancelled, internal int
	for i := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for range perWorker {
				tier := Tier(r.IntN(int(NumTiers)))
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(4) == 0 {
					spins := r.IntN(20)
					go func() {
						for range spins {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				isInternal := r.IntN(20) == 0
				done, err := chanAdmit(c, ctx, tier, isInternal)
				mu.Lock()
				if isInternal {
					internal++
				}
				if err != nil {
					cancelled++
				} else {
					admitted++
				}
				mu.Unlock()
				if err != nil {
					if !errors.Is(err, context.Canceled) || done != nil {
						t.Errorf("Admit: done %v, err %v", done != nil, err)
					}
					cancel()
					continue
				}
				for range r.IntN(10) {
					runtime.Gosched()
				}
				done()
				if r.IntN(10) == 0 {
					done()
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(stop)
	background.Wait()

	c.mu.Lock()
	violations := m.violations
	running, waiting, high, normProc := m.running, m.waiting, m.high, m.normProc
	c.mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	if running != [NumTiers]int{} || waiting != [NumTiers]int{} || high != 0 || normProc != 0 {
		t.Errorf("model not idle at the end: running %v waiting %v high %d norm_proc %d", running, waiting, high, normProc)
	}
	assertIdle(t, c)
	st := c.Stats()
	var total uint64
	for tier := range NumTiers {
		total += st.Tiers[tier].Admitted + st.Tiers[tier].Cancelled
	}
	// Internal requests bypass the channel and are not counted.
	if want := uint64(admitted + cancelled - internal); total != want {
		t.Errorf("channel counted %d admitted+cancelled, workers saw %d", total, want)
	}
	if !guard && m.guardAdmits != 0 {
		t.Errorf("%d guard admissions with the guard off", m.guardAdmits)
	}
	t.Logf("admitted %d (%d internal), cancelled %d, guard admissions %d", admitted, internal, cancelled, m.guardAdmits)
}
