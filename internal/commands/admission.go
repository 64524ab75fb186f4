package commands

import (
	"context"
	"time"

	"tierdb/internal/qos"
)

// admissionHold is the admission a request holds while it runs (the
// priority channel, then the user's fair share). A request that waits for
// something other than PostgreSQL (a tailable or change-stream getMore
// awaiting new data) gives it back for the wait with idle, so an idle
// high-tier cursor never holds lower tiers at the door and an idle low-tier
// one never takes a restricted slot.
type admissionHold struct {
	h    *Handlers
	tier qos.Tier
	p    qos.Principal
	acct *userAccount
	// done releases what admit took; nil while not admitted.
	done []func()
}

type admissionHoldKey struct{}

// admit waits for the request's admission.
func (a *admissionHold) admit(ctx context.Context) error {
	h := a.h
	t0 := time.Now()
	defer func() { a.acct.waitNanos.Add(int64(time.Since(t0))) }()
	done, err := h.opts.Admission.Admit(ctx, a.tier, false)
	if err != nil {
		return err
	}
	a.done = append(a.done, done)
	t1 := time.Now()
	h.instr.qosWait[a.tier].Observe(t1.Sub(t0).Seconds())
	if h.opts.Fair != nil {
		fdone, err := h.opts.Fair.Admit(ctx, a.tier, a.p)
		if err != nil {
			a.release()
			return err
		}
		a.done = append(a.done, fdone)
		h.instr.fairWait[a.tier].Observe(time.Since(t1).Seconds())
	}
	return nil
}

// release gives the admission back (once; a no-op when not admitted).
func (a *admissionHold) release() {
	for i := len(a.done) - 1; i >= 0; i-- {
		a.done[i]()
	}
	a.done = nil
}

// idle runs wait without holding the request's admission, then waits to be
// admitted again. Requests that were not admitted (internal commands,
// statements of a transaction, --qos=off) just wait.
func idle(ctx context.Context, wait func()) error {
	a, _ := ctx.Value(admissionHoldKey{}).(*admissionHold)
	if a == nil || a.done == nil {
		wait()
		return nil
	}
	a.release()
	wait()
	return a.admit(ctx)
}
