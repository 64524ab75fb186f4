package commands

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
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
	key, filter, err := distinctArgs(req)
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
		read = func(ctx context.Context, on storage.On, db, coll string, rs *readSpec, fn func(bson.D) error) error {
			return h.readText(ctx, on, db, coll, text, rs, fn)
		}
	}
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	vals := newDistinctValues()
	err = read(ctx, on, req.DB, name, rs, func(doc bson.D) error { return vals.addFrom(doc, key) })
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: vals.sorted()}}, nil
}

// distinctArgs reads distinct's key and query.
func distinctArgs(req *Request) (string, bson.D, error) {
	keyV, ok := lookup(req.Cmd, "key")
	if !ok {
		return "", nil, mongoerr.New(mongoerr.Location40414, "BSON field 'distinct.key' is missing but a required field")
	}
	key, ok := keyV.(string)
	if !ok {
		return "", nil, typeErr("distinct.key", "string", keyV)
	}
	filter, err := getDoc(req.Cmd, "query")
	return key, filter, err
}

// distinctValues gathers distinct values, within the reply's size cap.
type distinctValues struct {
	seen   map[string]bool
	values bson.A
	size   int
}

func newDistinctValues() *distinctValues { return &distinctValues{seen: map[string]bool{}} }

func (d *distinctValues) add(v any) error {
	k := string(query.AppendKey(nil, v))
	if d.seen[k] {
		return nil
	}
	raw, err := bsonx.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		return err
	}
	if d.size += len(raw); d.size > maxDistinctBytes {
		return mongoerr.New(mongoerr.Location17217, "distinct too big, 16mb cap")
	}
	d.seen[k] = true
	d.values = append(d.values, v)
	return nil
}

// addFrom adds the values of doc at key, arrays unwound one level.
func (d *distinctValues) addFrom(doc bson.D, key string) error {
	for _, v := range query.LookupAll(doc, key) {
		if arr, isArray := v.(bson.A); isArray {
			for _, e := range arr {
				if err := d.add(e); err != nil {
					return err
				}
			}
			continue
		}
		if err := d.add(v); err != nil {
			return err
		}
	}
	return nil
}

// sorted is the values in BSON order.
func (d *distinctValues) sorted() bson.A {
	sort.SliceStable(d.values, func(i, j int) bool { return query.Compare(d.values[i], d.values[j]) < 0 })
	if d.values == nil {
		return bson.A{}
	}
	return d.values
}
