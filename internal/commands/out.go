package commands

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// pipelineOutput is where a pipeline's $out and $merge write (exec.Output):
// through storage's write path on the primary, at the request's tier,
// after checking that the user may write the target. Collections $out
// started and did not commit are dropped by abort, whatever failed.
type pipelineOutput struct {
	h   *Handlers
	req *Request
	ctx context.Context
	// on is the request's, without the node reads were routed to: writes
	// and the reads $merge makes of its target go to the primary.
	on   storage.On
	outs []*outWriter
}

func (h *Handlers) newOutput(ctx context.Context, req *Request) *pipelineOutput {
	return &pipelineOutput{h: h, req: req, ctx: ctx, on: req.on}
}

// authorize checks that the user holds acts on db.coll.
func (o *pipelineOutput) authorize(db, coll string, acts ...auth.Action) error {
	s := o.req.Session
	if o.h.opts.Auth == nil || s == nil || s.User == nil || s.User.Grants.Allows(db, coll, auth.Actions(acts...)) {
		return nil
	}
	return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to write to %s with the aggregate command", db, coll)
}

// checkTarget refuses writing to a view or inside a transaction.
func (o *pipelineOutput) checkTarget(stage, db, coll string) error {
	if _, inTxn := lookup(o.req.Cmd, "autocommit"); inTxn {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTxn, "%s cannot be used in a transaction", stage)
	}
	v, err := o.h.viewOf(o.ctx, o.on, db, coll)
	if err != nil {
		return err
	}
	if v != nil {
		return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Cannot %s to a view: %s.%s", stage, db, coll)
	}
	return nil
}

// Out creates the collection that will replace db.coll, with db.coll's
// indexes, under a temporary name.
func (o *pipelineOutput) Out(_ context.Context, db, coll string) (exec.OutWriter, error) {
	if err := o.authorize(db, coll, auth.ActInsert, auth.ActRemove); err != nil {
		return nil, err
	}
	if err := o.checkTarget("$out", db, coll); err != nil {
		return nil, err
	}
	var indexes []storage.Index
	old, err := o.h.store.Collection(o.ctx, o.on, db, coll)
	switch {
	case err == nil && old.Capped != nil:
		return nil, mongoerr.Newf(mongoerr.Location17152, "namespace '%s.%s' is capped so it can't be used for $out", db, coll)
	case err == nil:
		indexes = slices.Clone(old.Indexes[1:])
	case !storage.IsCode(err, storage.ErrNamespaceNotFound):
		return nil, err
	}
	o.dropStale(db)
	tmp := fmt.Sprintf(outPrefix+"%s", bson.NewObjectID().Hex())
	w := &outWriter{o: o, db: db, coll: coll, tmp: tmp}
	o.outs = append(o.outs, w)
	if err := o.h.store.CreateCollection(o.ctx, o.on, db, tmp); err != nil {
		return nil, err
	}
	if len(indexes) > 0 {
		if _, _, _, err := o.h.store.CreateIndexes(o.ctx, o.on, db, tmp, indexes); err != nil {
			return nil, err
		}
	}
	if w.col, err = o.h.store.Collection(o.ctx, o.on, db, tmp); err != nil {
		return nil, err
	}
	return w, nil
}

// outPrefix names the collections $out fills before the swap.
const outPrefix = "tmp.agg_out."

// staleOut is how old a collection of an $out must be to be taken for
// the leftover of a crash: no $out runs that long.
const staleOut = 24 * time.Hour

// dropStale drops what crashed $outs left in db; a failure only goes to
// the log.
func (o *pipelineOutput) dropStale(db string) {
	names, err := o.h.store.StaleCollections(o.ctx, o.on, db, outPrefix, staleOut)
	for _, n := range names {
		if err == nil {
			err = o.h.store.DropCollection(o.ctx, o.on, db, n)
			if storage.IsCode(err, storage.ErrNamespaceNotFound) {
				err = nil
			}
		}
	}
	if err != nil {
		o.h.log.Warn("dropping collections left by a crashed $out failed", "db", db, "err", err)
	}
}

// abort drops the collections of $out stages that did not commit.
func (o *pipelineOutput) abort() {
	for _, w := range o.outs {
		if !w.done {
			ctx := context.WithoutCancel(o.ctx)
			if err := o.h.store.DropCollection(ctx, o.on, w.db, w.tmp); err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
				o.h.log.Warn("dropping an unfinished $out collection failed", "ns", w.db+"."+w.tmp, "err", err)
			}
		}
	}
}

type outWriter struct {
	o             *pipelineOutput
	db, coll, tmp string
	col           *storage.Collection
	done          bool
}

// Insert fills the new collection. Its commits need not wait for their
// WAL to reach disk: until the swap the collection is nobody's, and the
// swap's own (synchronous) commit flushes the WAL up to it, theirs
// included.
func (w *outWriter) Insert(docs []bson.D) error {
	on := w.o.on
	on.Async = true
	return insertAll(w.o.ctx, on, w.o.h.store, w.col, docs)
}

// Commit swaps the new collection in for the old one.
func (w *outWriter) Commit() error {
	if err := w.o.h.store.ReplaceCollection(w.o.ctx, w.o.on, w.db, w.tmp, w.coll); err != nil {
		if storage.IsCode(err, storage.ErrNamespaceExists) {
			return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Cannot $out to a view: %s.%s", w.db, w.coll)
		}
		return err
	}
	w.done = true
	w.o.h.cursors.killNamespace(w.db + "." + w.coll)
	return nil
}

// insertAll inserts docs, in order, failing at the first duplicate key.
func insertAll(ctx context.Context, on storage.On, store exec.Store, col *storage.Collection, docs []bson.D) error {
	prepared := make([]storage.Doc, len(docs))
	for i, d := range docs {
		p, err := prepareDoc(d)
		if err != nil {
			return err
		}
		prepared[i] = p
	}
	_, werrs, err := store.Insert(ctx, on, col, prepared, true)
	if err != nil {
		return err
	}
	if len(werrs) > 0 {
		return werrs[0].Err
	}
	return nil
}

// Merge opens db.coll for $merge: the 'on' fields must be _id or the
// fields of one of its unique indexes, so that a result matches at most
// one document.
func (o *pipelineOutput) Merge(_ context.Context, db, coll string, on []string) (exec.MergeTarget, error) {
	if err := o.authorize(db, coll, auth.ActInsert, auth.ActUpdate); err != nil {
		return nil, err
	}
	if err := o.checkTarget("$merge", db, coll); err != nil {
		return nil, err
	}
	col, err := o.h.store.Collection(o.ctx, o.on, db, coll)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	if !(len(on) == 1 && on[0] == "_id") && (col == nil || !hasUniqueIndexOn(col, on)) {
		return nil, mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
	}
	return &mergeTarget{o: o, db: db, coll: coll, col: col}, nil
}

// hasUniqueIndexOn reports whether a unique index of col has exactly the
// fields on, in any order, and covers every document (neither sparse nor
// partial), as MongoDB requires of $merge's 'on'.
func hasUniqueIndexOn(col *storage.Collection, on []string) bool {
	for _, ix := range col.Indexes {
		if !ix.Unique || ix.Sparse || ix.Partial != nil || ix.Text != nil || len(ix.Keys) != len(on) {
			continue
		}
		all := true
		for _, k := range ix.Keys {
			all = all && slices.Contains(on, k.Field)
		}
		if all {
			return true
		}
	}
	return false
}

type mergeTarget struct {
	o        *pipelineOutput
	db, coll string
	col      *storage.Collection // nil until the first insert creates it
}

func (t *mergeTarget) Find(filter bson.D, fn func(doc bson.D, token any) error) error {
	if t.col == nil {
		return nil
	}
	f, err := query.ParseFilter(filter)
	if err != nil {
		return err
	}
	return t.o.h.eachMatch(t.o.ctx, t.o.on, t.col, &exec.ReadSpec{Filter: f}, func(doc bson.D, raw bson.Raw) (bool, error) {
		return false, fn(doc, raw)
	})
}

func (t *mergeTarget) Insert(docs []bson.D) error {
	if t.col == nil {
		col, err := t.o.h.store.CollectionForWrite(t.o.ctx, t.o.on, t.db, t.coll)
		if err != nil {
			return err
		}
		t.col = col
	}
	return insertAll(t.o.ctx, t.o.on, t.o.h.store, t.col, docs)
}

func (t *mergeTarget) Replace(tokens []any, docs []bson.D) ([]bool, error) {
	keys := make([][]byte, len(docs))
	olds := make([][]byte, len(docs))
	prepared := make([]storage.Doc, len(docs))
	for i, d := range docs {
		next, err := prepareDoc(d)
		if err != nil {
			return nil, err
		}
		keys[i], olds[i], prepared[i] = storage.IDKey(next.ID), tokens[i].(bson.Raw), next
	}
	return t.o.h.store.ReplaceMany(t.o.ctx, t.o.on, t.col, keys, olds, prepared)
}
