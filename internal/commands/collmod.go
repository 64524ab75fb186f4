package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// collMod changes an index's options: {collMod: coll, index: {name or
// keyPattern, hidden, expireAfterSeconds}}. Other collection options are
// refused (commandFields).
func (h *Handlers) collMod(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	v, ok := lookup(req.Cmd, "index")
	if !ok {
		// Nothing to change: MongoDB answers ok.
		if _, err := h.store.Collection(ctx, req.on, req.DB, name); err != nil {
			return nil, err
		}
		return bson.D{}, nil
	}
	spec, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index' is the wrong type, expected type 'object'")
	}
	var match func(*storage.Index) bool
	var change storage.IndexChange
	for _, e := range spec {
		switch e.Key {
		case "name":
			n, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.name' is the wrong type, expected type 'string'")
			}
			if match != nil {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern, not both.")
			}
			match = func(ix *storage.Index) bool { return ix.Name == n }
		case "keyPattern":
			kp, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.keyPattern' is the wrong type, expected type 'object'")
			}
			keys, err := parseIndexKey(kp)
			if err != nil {
				return nil, err
			}
			if match != nil {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern, not both.")
			}
			want := storage.Index{Keys: keys}
			match = func(ix *storage.Index) bool { return ix.SameKeys(&want) }
		case "hidden":
			b, err := getBool(spec, e.Key, false)
			if err != nil {
				return nil, err
			}
			change.Hidden = &b
		case "expireAfterSeconds":
			n, ok := ttlSeconds(e.Value)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be numeric and within [0, %d]", maxTTLSeconds)
			}
			change.ExpireAfterSeconds = &n
		case "unique", "prepareUnique", "forceNonUnique":
			return nil, mongoerr.Newf(mongoerr.NotImplemented, "collMod index option '%s' is not supported by tierdb", e.Key)
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field 'collMod.index.%s' is an unknown field.", e.Key)
		}
	}
	if match == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern.")
	}
	if change.Hidden == nil && change.ExpireAfterSeconds == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds or hidden field")
	}
	if col, err := h.store.Collection(ctx, req.on, req.DB, name); err == nil {
		n := 0
		for i := range col.Indexes {
			if match(&col.Indexes[i]) {
				n++
			}
		}
		if n > 1 {
			return nil, mongoerr.Newf(mongoerr.AmbiguousIndexKeyPattern, "index keyPattern matches %d indexes, must use index name", n)
		}
	}
	before, after, err := h.store.ModifyIndex(ctx, req.on, req.DB, name, match, change)
	if err != nil {
		return nil, err
	}
	var reply bson.D
	if change.ExpireAfterSeconds != nil {
		if before.ExpireAfterSeconds != nil {
			reply = append(reply, bson.E{Key: "expireAfterSeconds_old", Value: *before.ExpireAfterSeconds})
		}
		reply = append(reply, bson.E{Key: "expireAfterSeconds_new", Value: *after.ExpireAfterSeconds})
	}
	if change.Hidden != nil && before.Hidden != after.Hidden {
		reply = append(reply, bson.E{Key: "hidden_old", Value: before.Hidden}, bson.E{Key: "hidden_new", Value: after.Hidden})
	}
	return reply, nil
}
