package tierctl

import (
	"sync"
	"time"

	"tierdb/internal/mongoerr"
	"tierdb/internal/osprio"
	"tierdb/internal/qos"
)

// Manager owns the running QoS configuration: it validates a new one as a
// whole and only then hands it to the priority channel and the controller, so
// a bad change leaves everything as it was.
type Manager struct {
	Channel    *qos.Channel
	Gate       *qos.Gate
	Controller *Controller

	mu  sync.Mutex
	cfg qos.Config
	// calibrating: a calibration of P owns the gate's limits until it
	// ends; lastCalibration is the latest outcome.
	calibrating     bool
	lastCalibration *qos.Calibration
	// gaveUp: the last calibration found no window without the high tier.
	gaveUp bool
	// auto: P is re-estimated by AutoCalibrate until set by hand.
	auto bool
}

// NewManager starts a manager for a validated configuration. The controller
// and alsoHigh (when not nil) learn whenever the high tier's activity flips.
func NewManager(cfg qos.Config, ch *qos.Channel, gate *qos.Gate, ctrl *Controller, alsoHigh func(active bool)) *Manager {
	if alsoHigh == nil {
		ch.OnHighActive(ctrl.SetHighActive)
	} else {
		ch.OnHighActive(func(active bool) {
			ctrl.SetHighActive(active)
			alsoHigh(active)
		})
	}
	return &Manager{Channel: ch, Gate: gate, Controller: ctrl, cfg: cfg}
}

// AdjustSLOs runs one period of the gate's latency-objective controller
// and hands the priority channel the anticipation that the high tier's
// objectives ask for (qos/slo.go).
func (m *Manager) AdjustSLOs() {
	m.Gate.AdjustSLOs()
	m.Channel.SetObjectiveAnticipation(m.Gate.ObjectiveHold())
}

// Config returns the running configuration.
func (m *Manager) Config() qos.Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// Validate checks cfg against this machine's CPUs.
func Validate(cfg qos.Config) error {
	online, err := osprio.OnlineCPUs()
	if err != nil && cfg.Pools.Enabled() {
		return err
	}
	if err := cfg.Validate(online); err != nil {
		return err
	}
	if cfg.Enabled && cfg.Slice != [qos.NumTiers]time.Duration{} && !osprio.SlicesSupported() {
		return mongoerr.New(mongoerr.InvalidOptions, "this kernel keeps no custom time slices (Linux 6.12 and later do): slices must be 0 here")
	}
	return nil
}

// Update applies change to a copy of the running configuration, validates
// the result and, only if it is valid, makes it the running one. setsP says
// the change gives P by hand (setQoSConfig's parallelism): then tierdb's own
// choice of P ends even if the value is the one it had found, and it is
// refused while a calibration runs, which would overwrite it.
func (m *Manager) Update(change func(*qos.Config) error, setsP bool) (qos.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.cfg
	if err := change(&next); err != nil {
		return m.cfg, err
	}
	next.Enabled = true // QoS cannot be switched off at run time
	if err := Validate(next); err != nil {
		return m.cfg, err
	}
	if m.calibrating && (next.Fair != m.cfg.Fair || setsP) {
		return m.cfg, mongoerr.New(mongoerr.ConflictingOperationInProg, "parallelism is being calibrated; change the fair-share settings when the calibration ends (qosStatus.fair.calibration)")
	}
	if err := m.Channel.SetThreshold(next.Threshold); err != nil {
		return m.cfg, err
	}
	if err := m.Gate.SetLimits(next.Fair); err != nil {
		return m.cfg, err
	}
	if setsP || next.Fair.Parallelism != m.cfg.Fair.Parallelism || next.Fair.ParallelismForFairness != m.cfg.Fair.ParallelismForFairness {
		m.auto = false // set by hand: the override holds
	}
	m.Channel.SetStarvationGuard(next.StarvationGuard)
	m.Channel.SetAnticipation(next.Anticipation)
	m.cfg = next
	m.Controller.SetConfig(next)
	return next, nil
}
