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
	// channel and fair are what admit took, zero while not admitted.
	channel qos.Entry
	fair    qos.Admission
}

type admissionHoldKey struct{}

// admit waits for the request's admission.
func (a *admissionHold) admit(ctx context.Context) error {
	h := a.h
	t0 := time.Now()
	op, _ := ctx.Value(liveOpKey{}).(*liveOp)
	if op != nil {
		op.queued.Store(true) // currentOp's waitingForAdmission
		defer op.queued.Store(false)
	}
	entry, err := h.opts.Admission.Admit(ctx, a.tier, false)
	t1 := time.Now()
	if err != nil {
		a.acct.waitNanos.Add(int64(t1.Sub(t0)))
		return err
	}
	a.channel = entry
	h.instr.qosWait[a.tier].Observe(t1.Sub(t0).Seconds())
	t2 := t1
	if h.opts.Fair != nil {
		a.fair, err = h.opts.Fair.Admit(ctx, a.tier, a.p)
		t2 = time.Now()
		if err != nil {
			a.release()
		} else {
			h.instr.fairWait[a.tier].Observe(t2.Sub(t1).Seconds())
		}
	}
	a.acct.waitNanos.Add(int64(t2.Sub(t0)))
	return err
}

// release gives the admission back (once; a no-op when not admitted).
func (a *admissionHold) release() {
	a.fair.Done()
	a.channel.Done()
	a.fair, a.channel = qos.Admission{}, qos.Entry{}
}

// idle runs wait without holding the request's admission, then waits to be
// admitted again. Requests that were not admitted (internal commands,
// statements of a transaction, --qos=off) just wait.
func idle(ctx context.Context, wait func()) error {
	a, _ := ctx.Value(admissionHoldKey{}).(*admissionHold)
	if a == nil || a.channel == (qos.Entry{}) {
		wait()
		return nil
	}
	a.release()
	wait()
	return a.admit(ctx)
}
