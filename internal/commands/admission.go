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

// admit waits for the request's admission; the request arrived at
// arrived. A request admitted at once reads no clock here: the channel and
// the gate say how long it waited.
func (a *admissionHold) admit(ctx context.Context, arrived time.Time) error {
	h := a.h
	op, _ := ctx.Value(liveOpKey{}).(*liveOp)
	if op != nil {
		op.queued.Store(true) // currentOp's waitingForAdmission
		defer op.queued.Store(false)
	}
	entry, err := h.opts.Admission.Admit(ctx, a.tier, false)
	if err != nil {
		a.acct.waitNanos.Add(int64(time.Since(arrived)))
		return err
	}
	a.channel = entry
	waited := entry.Waited()
	h.instr.qosWait[a.tier].Observe(waited.Seconds())
	if h.opts.Fair != nil {
		if waited > 0 {
			arrived = time.Now() // the gate's own wait starts now
		}
		a.fair, err = h.opts.Fair.Admit(ctx, a.tier, a.p, arrived)
		if err != nil {
			now := time.Now()
			a.release(now)
			a.acct.waitNanos.Add(int64(now.Sub(arrived) + waited))
			return err
		}
		h.instr.fairWait[a.tier].Observe(a.fair.Waited().Seconds())
		waited += a.fair.Waited()
	}
	a.acct.waitNanos.Add(int64(waited))
	return nil
}

// release gives the admission back (once; a no-op when not admitted); the
// request's time at the gate ends at end.
func (a *admissionHold) release(end time.Time) {
	a.fair.DoneAt(end)
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
	a.release(time.Now())
	wait()
	return a.admit(ctx, time.Now())
}
