package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/storage"
)

// defaultFirstBatch is the number of documents in a first batch when the
// client names none, as MongoDB does.
const defaultFirstBatch = 101

// read is a read of col as exec runs it (exec.Read), where on says, its
// plan noted for the slow log.
func (h *Handlers) read(ctx context.Context, on storage.On, col *storage.Collection, rs *exec.ReadSpec) *exec.Read {
	return &exec.Read{Store: h.store, On: on, Col: col, Spec: rs, Note: planNote(ctx)}
}

// eachMatch calls fn for each document matching rs, in _id order, until
// fn says stop (exec.Read.Each).
func (h *Handlers) eachMatch(ctx context.Context, on storage.On, col *storage.Collection, rs *exec.ReadSpec, fn func(doc bson.D, raw bson.Raw) (stop bool, err error)) error {
	return h.read(ctx, on, col, rs).Each(ctx, fn)
}
