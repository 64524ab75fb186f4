package tierctl

import (
	"context"
	"fmt"
	"time"

	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

// calibrationTick is how often the calibration looks at the gate.
const calibrationTick = 20 * time.Millisecond

// Recalibrate finds P, the delivered parallelism, on the live traffic
// (seed 004 §4.3.1): it runs the gate at P0 = 2, P1 = max(3, maxP/4) and
// P2 = maxP for window each (interleaved slices, see qos.Calibrator), fits
// Eq. 2, checks the matching point with a fourth window and makes the
// smallest measured point within the margin (5 % to 15 %) of the most
// throughput the running P (0, no limit, when that is P2: only no limit
// reached the peak). P0 is 2 rather than 1 because one request at a time leaves
// PostgreSQL's group commit nothing to group: on write-heavy traffic that
// window would cost a sixth of the throughput for no information. It returns
// at once; the calibration runs in the background, and qosStatus reports
// it. maxP is the most requests the backends can hold at once.
func (m *Manager) Recalibrate(window time.Duration, maxP int) error {
	if window < 100*time.Millisecond || window > 10*time.Minute {
		return mongoerr.Newf(mongoerr.BadValue, "calibration window must be from 100 ms to 10 minutes, got %v", window)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calibrating {
		return mongoerr.New(mongoerr.ConflictingOperationInProg, "a calibration of parallelism is already running")
	}
	m.calibrating = true
	maxP = max(maxP, 4)
	c := qos.NewCalibrator(2, max(3, maxP/4), maxP, window)
	go m.calibrate(c)
	return nil
}

// calibrate drives c. While the high tier is active the gate keeps the P
// there was, as it was (the calibrator measures nothing then): a sample's
// small P must not hold the high tier's own requests back. The fair-share
// settings cannot change meanwhile (Update refuses).
func (m *Manager) calibrate(c *qos.Calibrator) {
	running := m.Config().Fair
	sample := running
	sample.Parallelism, sample.ParallelismForFairness = c.Start(time.Now()), false // a sample's P always holds
	applied := sample
	_ = m.Gate.SetLimits(applied)
	tick := time.NewTicker(calibrationTick)
	defer tick.Stop()
	for now := range tick.C {
		completed, highActive := m.Gate.Completed()
		next, res := c.Tick(now, completed, highActive)
		if res != nil && res.P < 0 {
			m.mu.Lock()
			m.calibrating, m.gaveUp = false, res.Interrupted
			_ = m.Gate.SetLimits(m.cfg.Fair) // the P there was
			m.mu.Unlock()
			m.Controller.log.Info("parallelism calibration gave up: no window with the high tier idle and requests completing")
			return
		}
		if res != nil {
			m.mu.Lock()
			m.cfg.Fair.Parallelism, m.cfg.Fair.ParallelismForFairness = res.P, res.ForFairness
			m.lastCalibration, m.gaveUp = res, false
			m.calibrating = false
			_ = m.Gate.SetLimits(m.cfg.Fair)
			m.mu.Unlock()
			s := res.Samples
			m.Controller.log.Info("parallelism calibrated", "p", res.P, "forFairness", res.ForFairness, "fitted", res.Fitted, "predicted", res.Predicted, "noise", res.Noise,
				"samples", fmt.Sprintf("P=%d %.0f/s, P=%d %.0f/s, P=%d %.0f/s, check P=%d %.0f/s", s[0].P, s[0].Lambda, s[1].P, s[1].Lambda, s[2].P, s[2].Lambda, res.Check.P, res.Check.Lambda))
			return
		}
		want := sample
		want.Parallelism = next
		if highActive {
			want = running
		}
		if want != applied {
			applied = want
			_ = m.Gate.SetLimits(applied)
		}
	}
}

// Calibration reports whether a calibration runs and the last one's
// outcome (nil before the first).
func (m *Manager) Calibration() (running bool, last *qos.Calibration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calibrating, m.lastCalibration
}

// AutoCalibrate re-estimates P by itself until ctx ends (--parallelism
// auto): it watches the gate's demand and recalibrates, with window per
// sample, when the policy says so. A manual parallelism (setQoSConfig)
// ends it.
func (m *Manager) AutoCalibrate(ctx context.Context, policy qos.AutoCalibration, window time.Duration, maxP int) {
	m.mu.Lock()
	m.auto = true
	m.mu.Unlock()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if !m.Auto() {
				return
			}
			m.mu.Lock()
			running, gaveUp := m.calibrating, m.gaveUp
			m.gaveUp = false
			m.mu.Unlock()
			if running {
				continue
			}
			if gaveUp {
				policy.Retry()
			}
			if st := m.Gate.Stats(); policy.Observe(now, st.Demand(), st.Users) {
				_ = m.Recalibrate(window, maxP)
			}
		}
	}
}

// Auto reports whether tierdb picks P by itself.
func (m *Manager) Auto() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.auto
}
