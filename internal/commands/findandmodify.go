package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

func (h *Handlers) findAndModify(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var q, sortDoc, fields bson.D
	if q, err = getDoc(req.Cmd, "query"); err != nil {
		return nil, err
	}
	if sortDoc, err = getDoc(req.Cmd, "sort"); err != nil {
		return nil, err
	}
	if fields, err = getDoc(req.Cmd, "fields"); err != nil {
		return nil, err
	}
	remove, err := getBool(req.Cmd, "remove", false)
	if err != nil {
		return nil, err
	}
	returnNew, err := getBool(req.Cmd, "new", false)
	if err != nil {
		return nil, err
	}
	upsert, err := getBool(req.Cmd, "upsert", false)
	if err != nil {
		return nil, err
	}
	u, hasUpdate := lookup(req.Cmd, "update")
	if remove == hasUpdate {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	}
	if remove && (upsert || returnNew) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true or upsert/new with remove")
	}
	arrayFilters, hasFilters := lookup(req.Cmd, "arrayFilters")
	if remove && hasFilters {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify arrayFilters and remove=true")
	}
	if _, isPipeline := u.(bson.A); isPipeline && hasFilters {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify arrayFilters and a pipeline update")
	}
	env, err := newUpdateEnv(req.Cmd)
	if err != nil {
		return nil, err
	}
	var upd *update.Update
	if hasUpdate {
		if upd, err = env.parseUpdateArg(u, arrayFilters, hasFilters, nil, "findAndModify.arrayFilters"); err != nil {
			return nil, err
		}
		if upd.IsReplacement() {
			ctx = storage.Replacing(ctx) // a "replace" change event
		}
	}
	rs, err := env.readSpec(q, sortDoc, 1)
	if err != nil {
		return nil, err
	}
	var proj *update.Projection
	if len(fields) > 0 {
		if proj, err = update.ParseProjection(fields, rs.Filter); err != nil {
			return nil, err
		}
	}
	// A positional projection reads the array position the query matches
	// in the document returned (with new: true, the updated one).
	project := func(d bson.D) (any, error) {
		if d == nil {
			return nil, nil
		}
		if proj != nil {
			return proj.Apply(d)
		}
		return d, nil
	}
	on := req.on
	col, err := h.store.Collection(ctx, on, req.DB, name)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	res, err := h.writer(ctx, req, name, col).FindAndModify(ctx, exec.FindAndModify{
		Spec: rs, Update: upd, Remove: remove, Upsert: upsert, ReturnNew: returnNew,
	})
	if err != nil {
		return nil, err
	}
	leo := bson.D{{Key: "n", Value: int32(res.N)}}
	if !remove {
		leo = append(leo, bson.E{Key: "updatedExisting", Value: res.UpdatedExisting})
	}
	if res.UpsertedID != nil {
		leo = append(leo, bson.E{Key: "upserted", Value: res.UpsertedID})
	}
	v, err := project(res.Value)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "lastErrorObject", Value: leo}, {Key: "value", Value: v}}, nil
}
