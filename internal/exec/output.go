package exec

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// StoreOutput is the Output through which $out and $merge write to
// storage (OutStore), where On says: the request's tier on the primary
// (the handler gives the request's On without the node its reads were
// routed to, as writes and $merge's reads of its target go to the
// primary). $out fills a new collection, created with the target's
// indexes under a temporary name, and swaps it in at Commit; Abort drops
// those that did not commit, whatever failed. $merge reads its target a
// batch at a time (Read.Each) and replaces each batch's matches in one
// commit. What a target the user may write is, and whether the request
// may write at all, is the handler's: Check decides it.
type StoreOutput struct {
	Store OutStore
	On    storage.On
	// Check refuses writing to db.coll with stage ("$out" or "$merge");
	// nil accepts every target.
	Check func(stage, db, coll string) error
	// Replaced, when set, hears of each collection $out replaced.
	Replaced func(db, coll string)
	// Note, when set, records the plan of $merge's reads.
	Note func(string)
	// Warn, when set, logs what failed without failing the pipeline.
	Warn func(msg string, args ...any)

	outs []*outWriter
}

// outPrefix names the collections $out fills before the swap.
const outPrefix = "tmp.agg_out."

// staleOut is how old a collection of an $out must be to be taken for
// the leftover of a crash: no $out runs that long.
const staleOut = 24 * time.Hour

func (o *StoreOutput) check(stage, db, coll string) error {
	if o.Check == nil {
		return nil
	}
	return o.Check(stage, db, coll)
}

func (o *StoreOutput) warn(msg string, args ...any) {
	if o.Warn != nil {
		o.Warn(msg, args...)
	}
}

// Out creates the collection that will replace db.coll, with db.coll's
// indexes, under a temporary name.
func (o *StoreOutput) Out(ctx context.Context, db, coll string) (OutWriter, error) {
	if err := o.check("$out", db, coll); err != nil {
		return nil, err
	}
	var indexes []storage.Index
	old, err := o.Store.Collection(ctx, o.On, db, coll)
	switch {
	case err == nil && old.Capped != nil:
		return nil, mongoerr.Newf(mongoerr.Location17152, "namespace '%s.%s' is capped so it can't be used for $out", db, coll)
	case err == nil:
		indexes = slices.Clone(old.Indexes[1:])
	case !storage.IsCode(err, storage.ErrNamespaceNotFound):
		return nil, err
	}
	o.dropStale(ctx, db)
	tmp := fmt.Sprintf(outPrefix+"%s", bson.NewObjectID().Hex())
	w := &outWriter{o: o, ctx: ctx, db: db, coll: coll, tmp: tmp}
	o.outs = append(o.outs, w)
	if err := o.Store.CreateCollection(ctx, o.On, db, tmp); err != nil {
		return nil, err
	}
	if len(indexes) > 0 {
		if _, _, _, err := o.Store.CreateIndexes(ctx, o.On, db, tmp, indexes); err != nil {
			return nil, err
		}
	}
	if w.col, err = o.Store.Collection(ctx, o.On, db, tmp); err != nil {
		return nil, err
	}
	return w, nil
}

// dropStale drops what crashed $outs left in db; a failure only goes to
// the log.
func (o *StoreOutput) dropStale(ctx context.Context, db string) {
	names, err := o.Store.StaleCollections(ctx, o.On, db, outPrefix, staleOut)
	for _, n := range names {
		if err == nil {
			err = o.Store.DropCollection(ctx, o.On, db, n)
			if storage.IsCode(err, storage.ErrNamespaceNotFound) {
				err = nil
			}
		}
	}
	if err != nil {
		o.warn("dropping collections left by a crashed $out failed", "db", db, "err", err)
	}
}

// Abort drops the collections of $out stages that did not commit, even
// when ctx is done.
func (o *StoreOutput) Abort(ctx context.Context) {
	for _, w := range o.outs {
		if !w.done {
			ctx := context.WithoutCancel(ctx)
			if err := o.Store.DropCollection(ctx, o.On, w.db, w.tmp); err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
				o.warn("dropping an unfinished $out collection failed", "ns", w.db+"."+w.tmp, "err", err)
			}
		}
	}
}

type outWriter struct {
	o             *StoreOutput
	ctx           context.Context
	db, coll, tmp string
	col           *storage.Collection
	done          bool
}

// Insert fills the new collection. Its commits need not wait for their
// WAL to reach disk: until the swap the collection is nobody's, and the
// swap's own (synchronous) commit flushes the WAL up to it, theirs
// included.
func (w *outWriter) Insert(docs []bson.D) error {
	on := w.o.On
	on.Async = true
	return insertAll(w.ctx, on, w.o.Store, w.col, docs)
}

// Commit swaps the new collection in for the old one.
func (w *outWriter) Commit() error {
	if err := w.o.Store.ReplaceCollection(w.ctx, w.o.On, w.db, w.tmp, w.coll); err != nil {
		if storage.IsCode(err, storage.ErrNamespaceExists) {
			return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Cannot $out to a view: %s.%s", w.db, w.coll)
		}
		return err
	}
	w.done = true
	if w.o.Replaced != nil {
		w.o.Replaced(w.db, w.coll)
	}
	return nil
}

// insertAll inserts docs, in order, failing at the first duplicate key.
func insertAll(ctx context.Context, on storage.On, store Store, col *storage.Collection, docs []bson.D) error {
	prepared := make([]storage.Doc, len(docs))
	for i, d := range docs {
		p, err := PrepareDoc(d)
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
func (o *StoreOutput) Merge(ctx context.Context, db, coll string, on []string) (MergeTarget, error) {
	if err := o.check("$merge", db, coll); err != nil {
		return nil, err
	}
	col, err := o.Store.Collection(ctx, o.On, db, coll)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	if !(len(on) == 1 && on[0] == "_id") && (col == nil || !hasUniqueIndexOn(col, on)) {
		return nil, mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
	}
	return &mergeTarget{o: o, ctx: ctx, db: db, coll: coll, col: col}, nil
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
	o        *StoreOutput
	ctx      context.Context
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
	r := &Read{Store: t.o.Store, On: t.o.On, Col: t.col, Spec: &ReadSpec{Filter: f}, Note: t.o.Note}
	return r.Each(t.ctx, func(doc bson.D, raw bson.Raw) (bool, error) {
		return false, fn(doc, raw)
	})
}

func (t *mergeTarget) Insert(docs []bson.D) error {
	if t.col == nil {
		col, err := t.o.Store.CollectionForWrite(t.ctx, t.o.On, t.db, t.coll)
		if err != nil {
			return err
		}
		t.col = col
	}
	return insertAll(t.ctx, t.o.On, t.o.Store, t.col, docs)
}

func (t *mergeTarget) Replace(tokens []any, docs []bson.D) ([]bool, error) {
	keys := make([][]byte, len(docs))
	olds := make([][]byte, len(docs))
	prepared := make([]storage.Doc, len(docs))
	for i, d := range docs {
		next, err := PrepareDoc(d)
		if err != nil {
			return nil, err
		}
		keys[i], olds[i], prepared[i] = storage.IDKey(next.ID), tokens[i].(bson.Raw), next
	}
	return t.o.Store.ReplaceMany(t.ctx, t.o.On, t.col, keys, olds, prepared)
}
