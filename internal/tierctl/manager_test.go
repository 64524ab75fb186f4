package tierctl

import (
	"errors"
	"testing"

	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

func newTestManager(t *testing.T, p int) *Manager {
	t.Helper()
	cfg := quietConfig()
	cfg.Fair.Parallelism = p
	ch, err := qos.NewChannel(qos.ChannelOptions{Threshold: cfg.Threshold})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := qos.NewGate(qos.GateOptions{Parallelism: p})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := New(Options{}, cfg)
	t.Cleanup(ctrl.Close)
	return NewManager(cfg, ch, gate, ctrl, nil)
}

// A P given by hand ends tierdb's own choice of P even when it is the value
// the calibration had found: otherwise the next calibration would overwrite
// what the operator set.
func TestParallelismByHandEndsAutoEvenUnchanged(t *testing.T) {
	m := newTestManager(t, 4)
	m.auto = true
	same := func(c *qos.Config) error { c.Fair.Parallelism = 4; return nil }
	if _, err := m.Update(same, false); err != nil || !m.Auto() {
		t.Fatalf("a change that gives no P: err %v, auto %v (want it kept)", err, m.Auto())
	}
	if _, err := m.Update(same, true); err != nil || m.Auto() {
		t.Fatalf("P = 4 by hand: err %v, auto %v (want it ended)", err, m.Auto())
	}
	if p := m.Config().Fair.Parallelism; p != 4 {
		t.Fatalf("P = %d, want 4", p)
	}
}

// While a calibration runs, a P by hand is refused, not left for the
// calibration's result to overwrite.
func TestParallelismByHandRefusedWhileCalibrating(t *testing.T) {
	m := newTestManager(t, 4)
	m.calibrating = true
	_, err := m.Update(func(c *qos.Config) error { return nil }, true)
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.ConflictingOperationInProg {
		t.Fatalf("err %v, want ConflictingOperationInProg", err)
	}
	if _, err := m.Update(func(c *qos.Config) error { c.Threshold = 2; return nil }, false); err != nil {
		t.Fatalf("a threshold while calibrating: %v", err)
	}
}
