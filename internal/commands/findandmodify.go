package commands

import (
	"context"

	"tierdb/internal/bsonx"

	"go.mongodb.org/mongo-driver/v2/bson"

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
		if proj, err = update.ParseProjection(fields, rs.filter); err != nil {
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
	reply := func(n int, updatedExisting bool, upsertedID any, value bson.D) (bson.D, error) {
		leo := bson.D{{Key: "n", Value: int32(n)}}
		if !remove {
			leo = append(leo, bson.E{Key: "updatedExisting", Value: updatedExisting})
		}
		if upsertedID != nil {
			leo = append(leo, bson.E{Key: "upserted", Value: upsertedID})
		}
		v, err := project(value)
		if err != nil {
			return nil, err
		}
		return bson.D{{Key: "lastErrorObject", Value: leo}, {Key: "value", Value: v}}, nil
	}

	on := req.on
	col, err := h.store.Collection(ctx, on, req.DB, name)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	upsertRounds := 0
	for range casRetries {
		var doc bson.D
		var raw bson.Raw
		if col != nil {
			src, err := h.newSource(ctx, on, col, rs)
			if err != nil {
				return nil, err
			}
			batch, _, err := src.next(ctx, on, 1)
			if err != nil {
				return nil, err
			}
			if len(batch) == 1 {
				raw = batch[0]
				if doc, err = bsonx.Decode(raw); err != nil {
					return nil, err
				}
			}
		}
		switch {
		case doc == nil && upsert:
			newDoc, err := update.UpsertDocument(rs.filter.Equalities(), upd)
			if err != nil {
				return nil, err
			}
			prepared, err := prepareDoc(newDoc)
			if err != nil {
				return nil, err
			}
			id, err := h.insertOne(ctx, on, req.DB, name, prepared.D)
			upsertRounds++
			if storage.IsCode(err, storage.ErrDuplicateKey) && upsertRounds == 1 {
				// Maybe a concurrent upsert inserted the match: look once more.
				if col, err = h.store.Collection(ctx, on, req.DB, name); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			var value bson.D
			if returnNew {
				value = prepared.D
			}
			return reply(1, false, id, value)
		case doc == nil:
			return reply(0, false, nil, nil)
		case remove:
			id, _ := lookup(doc, "_id")
			n, err := h.store.Delete(ctx, on, col, []storage.Row{{Key: storage.IDKey(id), Doc: raw}})
			if err != nil {
				return nil, err
			}
			if n == 1 {
				return reply(1, false, nil, doc)
			}
		default:
			matched, _, newDoc, err := h.modify(ctx, on, col, rs.filter, doc, raw, func(d bson.D) (bson.D, bool, error) {
				doc = d
				return applyMatched(upd, rs.filter, d)
			})
			if err != nil {
				return nil, err
			}
			if matched {
				if returnNew {
					return reply(1, true, nil, newDoc)
				}
				return reply(1, true, nil, doc)
			}
		}
	}
	return nil, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
}
