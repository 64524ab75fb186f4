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
	var upd *update.Update
	if hasUpdate {
		if upd, err = update.Parse(u); err != nil {
			return nil, err
		}
		if upd.IsReplacement() {
			ctx = storage.Replacing(ctx) // a "replace" change event
		}
	}
	rs, err := parseReadSpec(q, sortDoc, nil, 0, 1)
	if err != nil {
		return nil, err
	}
	var proj *update.Projection
	if len(fields) > 0 {
		if proj, err = update.ParseProjection(fields); err != nil {
			return nil, err
		}
	}
	project := func(d bson.D) any {
		if d == nil {
			return nil
		}
		if proj != nil {
			return proj.Apply(d)
		}
		return d
	}
	reply := func(n int, updatedExisting bool, upsertedID any, value bson.D) bson.D {
		leo := bson.D{{Key: "n", Value: int32(n)}}
		if !remove {
			leo = append(leo, bson.E{Key: "updatedExisting", Value: updatedExisting})
		}
		if upsertedID != nil {
			leo = append(leo, bson.E{Key: "upserted", Value: upsertedID})
		}
		return bson.D{{Key: "lastErrorObject", Value: leo}, {Key: "value", Value: project(value)}}
	}

	col, err := h.store.Collection(ctx, req.DB, name)
	if err != nil && !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	upsertRounds := 0
	for range casRetries {
		var doc bson.D
		var raw bson.Raw
		if col != nil {
			src, err := h.newSource(ctx, col, rs)
			if err != nil {
				return nil, err
			}
			batch, _, err := src.next(ctx, 1)
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
			id, err := h.insertOne(ctx, req.DB, name, prepared.D)
			upsertRounds++
			if storage.IsCode(err, storage.ErrDuplicateKey) && upsertRounds == 1 {
				// Maybe a concurrent upsert inserted the match: look once more.
				if col, err = h.store.Collection(ctx, req.DB, name); err != nil {
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
			return reply(1, false, id, value), nil
		case doc == nil:
			return reply(0, false, nil, nil), nil
		case remove:
			id, _ := lookup(doc, "_id")
			n, err := h.store.Delete(ctx, col, []storage.Row{{Key: storage.IDKey(id), Doc: raw}})
			if err != nil {
				return nil, err
			}
			if n == 1 {
				return reply(1, false, nil, doc), nil
			}
		default:
			matched, _, newDoc, err := h.modify(ctx, col, rs.filter, doc, raw, func(d bson.D) (bson.D, bool, error) {
				doc = d
				return upd.Apply(d, false)
			})
			if err != nil {
				return nil, err
			}
			if matched {
				if returnNew {
					return reply(1, true, nil, newDoc), nil
				}
				return reply(1, true, nil, doc), nil
			}
		}
	}
	return nil, mongoerr.New(mongoerr.OperationFailed, "too many concurrent changes; retry")
}
