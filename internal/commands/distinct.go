package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// distinct answers the distinct values of key among the documents matching
// query (exec.Distinct).
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
	rs, err := exec.ParseReadSpec(rest, nil, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	read := h.readInto
	if text != nil {
		// The rest of the filter alone: never empty or exact.
		rs.Empty, rs.Exact = false, false
		read = func(ctx context.Context, on storage.On, db, coll string, rs *exec.ReadSpec, fn func(bson.D) error) error {
			return h.readText(ctx, on, db, coll, text, rs, &expr.Meta{}, fn)
		}
	}
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	vals := exec.NewDistinct(key)
	if err := read(ctx, on, req.DB, name, rs, vals.Push); err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: vals.Values()}}, nil
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
