package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// dbStats, collStats and $collStats: mongosh's db.stats() and
// coll.stats(). Sizes are PostgreSQL's: a collection's storageSize is its table (pg_table_size),
// an index's size its btree (pg_relation_size) plus, for a unique index,
// its entries table; size is the sum of the documents' BSON sizes.

// getScale reads scale: a whole number ≥ 1 (default 1).
func getScale(cmd bson.D) (int64, error) {
	v, ok := lookup(cmd, "scale")
	if !ok || v == nil {
		return 1, nil
	}
	n, isNum := asNumber(v)
	if !isNum {
		return 0, typeErr("scale", "long", v)
	}
	if n < 1 {
		return 0, mongoerr.Newf(mongoerr.ValueNegative, "BSON field 'scale' value must be >= 1, actual value '%d'", int64(n))
	}
	return int64(n), nil
}

func (h *Handlers) dbStats(ctx context.Context, req *Request) (bson.D, error) {
	scale, err := getScale(req.Cmd)
	if err != nil {
		return nil, err
	}
	free, err := getBool(req.Cmd, "freeStorage", false)
	if err != nil {
		return nil, err
	}
	if free {
		return nil, mongoerr.New(mongoerr.NotImplemented, "tierdb does not report free storage (dbStats freeStorage): PostgreSQL's free space is not measured; leave freeStorage out or set it to 0")
	}
	st, err := h.store.DatabaseStats(ctx, req.on, req.DB)
	if err != nil {
		return nil, err
	}
	views, err := h.store.ListViews(ctx, req.on, req.DB)
	if err != nil {
		return nil, err
	}
	avg := 0.0
	if st.Objects > 0 {
		avg = float64(st.DataSize) / float64(st.Objects)
	}
	return bson.D{
		{Key: "db", Value: req.DB},
		{Key: "collections", Value: int64(st.Collections)},
		{Key: "views", Value: int64(len(views))},
		{Key: "objects", Value: st.Objects},
		{Key: "avgObjSize", Value: avg},
		{Key: "dataSize", Value: float64(st.DataSize / scale)},
		{Key: "storageSize", Value: float64(st.StorageSize / scale)},
		{Key: "indexes", Value: int64(st.Indexes)},
		{Key: "indexSize", Value: float64(st.IndexSize / scale)},
		{Key: "totalSize", Value: float64(st.TotalSize / scale)},
		{Key: "scaleFactor", Value: scale},
	}, nil
}

// storageStats is $collStats' storageStats document (collStats' reply
// without its ns) for col; nil col (a missing collection) gives zeros,
// as MongoDB's collStats answers.
func (h *Handlers) storageStats(ctx context.Context, on storage.On, col *storage.Collection, scale int64) (bson.D, error) {
	st := &storage.CollectionStats{IndexSizes: map[string]int64{}}
	if col != nil {
		var err error
		if st, err = h.store.CollectionStats(ctx, on, col); err != nil {
			return nil, err
		}
	}
	avg := int64(0)
	if st.Count > 0 {
		avg = st.DataSize / st.Count
	}
	sizes := bson.D{}
	nindexes := 0
	if col != nil {
		nindexes = len(col.Indexes)
		for _, ix := range col.Indexes {
			sizes = append(sizes, bson.E{Key: ix.Name, Value: st.IndexSizes[ix.Name] / scale})
		}
	}
	capped := bson.D{{Key: "capped", Value: false}}
	if col != nil && col.Capped != nil {
		// A capped collection's limits: max 0 when only its size bounds it.
		capped = bson.D{{Key: "capped", Value: true}, {Key: "max", Value: col.Capped.Max}, {Key: "maxSize", Value: col.Capped.Size / scale}}
	}
	out := bson.D{
		{Key: "size", Value: st.DataSize / scale},
		{Key: "count", Value: st.Count},
		{Key: "avgObjSize", Value: avg},
		{Key: "numOrphanDocs", Value: int64(0)},
		{Key: "storageSize", Value: st.TableSize / scale},
		{Key: "freeStorageSize", Value: int64(0)},
	}
	out = append(out, capped...)
	return append(out, bson.D{
		{Key: "nindexes", Value: int64(nindexes)},
		{Key: "indexBuilds", Value: bson.A{}},
		{Key: "totalIndexSize", Value: st.TotalIndexSize() / scale},
		{Key: "indexSizes", Value: sizes},
		{Key: "totalSize", Value: st.TotalSize / scale},
		{Key: "scaleFactor", Value: scale},
	}...), nil
}

func (h *Handlers) collStats(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	scale, err := getScale(req.Cmd)
	if err != nil {
		return nil, err
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		col, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := h.storageStats(ctx, req.on, col, scale)
	if err != nil {
		return nil, err
	}
	return append(bson.D{{Key: "ns", Value: req.DB + "." + name}}, st...), nil
}

// collStatsStage produces the one document of a leading $collStats stage:
// storageStats (with scale) and count; latencyStats and queryExecStats
// need per-collection counters tierdb does not keep, and are refused.
func (h *Handlers) collStatsStage(ctx context.Context, req *Request, arg any) (bson.A, error) {
	name, ok := req.Cmd[0].Value.(string)
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$collStats must be run against a collection namespace")
	}
	spec, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location5447000, "$collStats must take a nested object but found: %s", query.TypeName(arg))
	}
	ns := req.DB + "." + name
	out := bson.D{{Key: "ns", Value: ns}, {Key: "host", Value: hostname()}, {Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())}}
	var col *storage.Collection
	needCol := func(what string) error {
		if col != nil {
			return nil
		}
		c, err := h.store.Collection(ctx, req.on, req.DB, name)
		if storage.IsCode(err, storage.ErrNamespaceNotFound) {
			if v, verr := h.viewOf(ctx, req.on, req.DB, name); verr == nil && v != nil {
				return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Unable to retrieve %s in $collStats stage :: caused by :: Namespace %s is a view, not a collection", what, ns)
			}
			return mongoerr.Newf(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s] not found.", what, ns)
		}
		col = c
		return err
	}
	for _, e := range spec {
		opts, isDoc := e.Value.(bson.D)
		if !isDoc {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", e.Key, query.TypeName(e.Value))
		}
		switch e.Key {
		case "storageStats":
			scale := int64(1)
			for _, o := range opts {
				switch o.Key {
				case "scale":
					if _, isNum := asNumber(o.Value); !isNum {
						return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$collStats.storageStats.scale' is the wrong type '%s', expected types '[long, int, decimal, double]'", query.TypeName(o.Value))
					}
					s, err := getScale(opts)
					if err != nil {
						return nil, err
					}
					scale = s
				case "verbose", "waitForLock", "numericOnly":
					// WiredTiger detail options: nothing to add or wait for.
				default:
					return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$collStats.storageStats.%s' is an unknown field.", o.Key)
				}
			}
			if err := needCol("storageStats"); err != nil {
				return nil, err
			}
			st, err := h.storageStats(ctx, req.on, col, scale)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: "storageStats", Value: st})
		case "count":
			if len(opts) > 0 {
				return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$collStats.count.%s' is an unknown field.", opts[0].Key)
			}
			if err := needCol("count"); err != nil {
				return nil, err
			}
			st, err := h.store.CollectionStats(ctx, req.on, col)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: "count", Value: st.Count})
		case "latencyStats", "queryExecStats":
			return nil, mongoerr.Newf(mongoerr.NotImplemented, "$collStats %s is not supported by tierdb: it keeps no per-collection latency or query counters", e.Key)
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$collStats.%s' is an unknown field.", e.Key)
		}
	}
	return bson.A{out}, nil
}
