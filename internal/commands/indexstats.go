package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// indexStatsStage produces the documents of a leading $indexStats stage:
// one per index of the collection, with its name, key, host, spec (as
// listIndexes shows it) and accesses: ops is how many scans PostgreSQL
// started on the index's btree (pg_stat_user_indexes.idx_scan, counted
// on the primary and published a moment after each statement), since
// the database's statistics were last reset or PostgreSQL started. A
// missing collection has no indexes, hence no documents.
func (h *Handlers) indexStatsStage(ctx context.Context, req *Request, arg any) (bson.A, error) {
	name, ok := req.Cmd[0].Value.(string)
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$indexStats must be run against a collection namespace")
	}
	if d, ok := arg.(bson.D); !ok || len(d) != 0 {
		return nil, mongoerr.Newf(mongoerr.Code(28803), "The $indexStats stage specification must be an empty object, found %s", query.TypeName(arg))
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return bson.A{}, nil
	}
	if err != nil {
		return nil, err
	}
	usage, err := h.store.IndexUsage(ctx, req.on, col)
	if err != nil {
		return nil, err
	}
	out := bson.A{}
	for i := range col.Indexes {
		ix := &col.Indexes[i]
		u := usage[ix.Name]
		out = append(out, bson.D{
			{Key: "name", Value: ix.Name},
			{Key: "key", Value: keyPattern(ix)},
			{Key: "host", Value: hostname()},
			{Key: "accesses", Value: bson.D{{Key: "ops", Value: u.Ops}, {Key: "since", Value: bson.NewDateTimeFromTime(u.Since)}}},
			{Key: "spec", Value: indexInfo(ix)},
		})
	}
	return out, nil
}
