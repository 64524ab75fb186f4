package commands

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// maxDistinctBytes is MongoDB's cap on distinct's values: a reply document.
const maxDistinctBytes = 16 * 1024 * 1024

// distinct answers the distinct values of key among the documents matching
// query, as MongoDB does: arrays at the key are unwound one level, missing
// values are left out (null is a value), values equal in BSON (1 and 1.0)
// count once, and the result is in BSON order.
func (h *Handlers) distinct(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	keyV, ok := lookup(req.Cmd, "key")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'distinct.key' is missing but a required field")
	}
	key, ok := keyV.(string)
	if !ok {
		return nil, typeErr("distinct.key", "string", keyV)
	}
	filter, err := getDoc(req.Cmd, "query")
	if err != nil {
		return nil, err
	}
	rest, text, err := splitText(filter)
	if err != nil {
		return nil, err
	}
	rs, err := parseReadSpec(rest, nil, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	read := h.readInto
	if text != nil {
		// The rest of the filter alone: never empty or exact.
		rs.empty, rs.exact = false, false
		read = func(ctx context.Context, db, coll string, rs *readSpec, fn func(bson.D) error) error {
			return h.readText(ctx, db, coll, text, rs, fn)
		}
	}
	ctx, done, err := h.routeRead(ctx, req)
	if err != nil {
		return nil, err
	}
	defer done()
	seen := map[string]bool{}
	var values bson.A
	size := 0
	add := func(v any) error {
		k := string(query.AppendKey(nil, v))
		if seen[k] {
			return nil
		}
		raw, err := bsonx.Marshal(bson.D{{Key: "v", Value: v}})
		if err != nil {
			return err
		}
		if size += len(raw); size > maxDistinctBytes {
			return mongoerr.New(mongoerr.Location17217, "distinct too big, 16mb cap")
		}
		seen[k] = true
		values = append(values, v)
		return nil
	}
	err = read(ctx, req.DB, name, rs, func(doc bson.D) error {
		for _, v := range query.LookupAll(doc, key) {
			if arr, isArray := v.(bson.A); isArray {
				for _, e := range arr {
					if err := add(e); err != nil {
						return err
					}
				}
				continue
			}
			if err := add(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(values, func(i, j int) bool { return query.Compare(values[i], values[j]) < 0 })
	if values == nil {
		values = bson.A{}
	}
	return bson.D{{Key: "values", Value: values}}, nil
}
