package commands

import (
	"context"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
)

// newOutput is where req's pipeline writes ($out and $merge run in
// exec.StoreOutput): at the request's On without the node reads were
// routed to (writes, and $merge's reads of its target, go to the
// primary), into targets the user may write that are neither views nor
// inside a transaction; a collection $out replaced has its cursors
// closed. The caller defers its Abort.
func (h *Handlers) newOutput(ctx context.Context, req *Request) *exec.StoreOutput {
	return &exec.StoreOutput{Store: h.store, On: req.on, Note: planNote(ctx), Warn: h.log.Warn,
		Check:    func(stage, db, coll string) error { return h.checkOutput(ctx, req, stage, db, coll) },
		Replaced: func(db, coll string) { h.cursors.killNamespace(db + "." + coll) }}
}

// outputActions are what a writing stage needs on its target.
var outputActions = map[string][]auth.Action{
	"$out":   {auth.ActInsert, auth.ActRemove},
	"$merge": {auth.ActInsert, auth.ActUpdate},
}

// checkOutput refuses stage's writing to db.coll when the user may not,
// when it is a view, or inside a transaction.
func (h *Handlers) checkOutput(ctx context.Context, req *Request, stage, db, coll string) error {
	s := req.Session
	if h.opts.Auth != nil && s != nil && s.User != nil && !s.User.Grants.Allows(db, coll, auth.Actions(outputActions[stage]...)) {
		return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to write to %s with the aggregate command", db, coll)
	}
	if _, inTxn := lookup(req.Cmd, "autocommit"); inTxn {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTxn, "%s cannot be used in a transaction", stage)
	}
	v, err := h.viewOf(ctx, req.on, db, coll)
	if err != nil {
		return err
	}
	if v != nil {
		return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Cannot %s to a view: %s.%s", stage, db, coll)
	}
	return nil
}
