package commands

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// The database administration commands of mongosh's db.stats(),
// coll.stats(), coll.validate() and coll.renameCollection(). Sizes are
// PostgreSQL's: a collection's storageSize is its table (pg_table_size),
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
	if _, err := getBool(req.Cmd, "freeStorage", false); err != nil {
		return nil, err
	}
	st, err := h.store.DatabaseStats(ctx, req.DB)
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
		{Key: "views", Value: int64(0)},
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
func (h *Handlers) storageStats(ctx context.Context, col *storage.Collection, scale int64) (bson.D, error) {
	st := &storage.CollectionStats{IndexSizes: map[string]int64{}}
	if col != nil {
		var err error
		if st, err = h.store.CollectionStats(ctx, col); err != nil {
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
	return bson.D{
		{Key: "size", Value: st.DataSize / scale},
		{Key: "count", Value: st.Count},
		{Key: "avgObjSize", Value: avg},
		{Key: "numOrphanDocs", Value: int64(0)},
		{Key: "storageSize", Value: st.TableSize / scale},
		{Key: "freeStorageSize", Value: int64(0)},
		{Key: "capped", Value: false},
		{Key: "nindexes", Value: int64(nindexes)},
		{Key: "indexBuilds", Value: bson.A{}},
		{Key: "totalIndexSize", Value: st.TotalIndexSize() / scale},
		{Key: "indexSizes", Value: sizes},
		{Key: "totalSize", Value: st.TotalSize / scale},
		{Key: "scaleFactor", Value: scale},
	}, nil
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
	col, err := h.store.Collection(ctx, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		col, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := h.storageStats(ctx, col, scale)
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
		c, err := h.store.Collection(ctx, req.DB, name)
		if storage.IsCode(err, storage.ErrNamespaceNotFound) {
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
			st, err := h.storageStats(ctx, col, scale)
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
			st, err := h.store.CollectionStats(ctx, col)
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

// aggregateAccess is what an aggregate needs: find on the collection,
// except for the source stages: collStats for $collStats, and nothing
// more than being a user for $currentOp (whose allUsers the stage checks
// against inprog).
var aggregateAccess = access{kind: accessCollection, actionsFor: func(cmd bson.D) auth.ActionSet {
	if p, _ := lookup(cmd, "pipeline"); p != nil {
		if a, _ := p.(bson.A); len(a) > 0 {
			if st, _ := a[0].(bson.D); len(st) == 1 {
				switch st[0].Key {
				case "$currentOp":
					return 0
				case "$collStats":
					return auth.Actions(auth.ActCollStats)
				}
			}
		}
	}
	return auth.Actions(auth.ActFind)
}}

// aggregateSource runs a pipeline whose first stage produces documents
// instead of reading the collection ($collStats, $currentOp); handled is
// false for any other pipeline.
func (h *Handlers) aggregateSource(ctx context.Context, req *Request) (reply bson.D, handled bool, err error) {
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil || len(pipeline) == 0 {
		return nil, false, nil
	}
	first, ok := pipeline[0].(bson.D)
	if !ok || len(first) != 1 || (first[0].Key != "$collStats" && first[0].Key != "$currentOp") {
		return nil, false, nil
	}
	if explain, _ := getBool(req.Cmd, "explain", false); explain {
		return nil, true, mongoerr.Newf(mongoerr.NotImplemented, "explain of a %s pipeline is not supported by tierdb", first[0].Key)
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, true, err
	}
	if _, ok := lookup(req.Cmd, "cursor"); !ok {
		return nil, true, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, true, err
	}
	stages, err := exec.ParsePipeline(pipeline[1:])
	if err != nil {
		return nil, true, err
	}
	sink := &exec.Collect{}
	head, err := exec.Build(stages, sink, &exec.Env{Ctx: ctx, Read: h.reader(req)})
	if err != nil {
		return nil, true, err
	}
	var docs bson.A
	ns := req.DB + ".$cmd.aggregate"
	if first[0].Key == "$currentOp" {
		docs, err = h.currentOpStage(req, first[0].Value)
	} else {
		docs, err = h.collStatsStage(ctx, req, first[0].Value)
		ns = req.DB + "." + req.Cmd[0].Value.(string)
	}
	if err != nil {
		return nil, true, err
	}
	for _, d := range docs {
		if err := head.Push(d.(bson.D)); err != nil {
			if err == exec.ErrDone {
				break
			}
			return nil, true, err
		}
	}
	if err := head.Finish(); err != nil {
		return nil, true, err
	}
	reply, err = h.firstBatch(ctx, req, ns, &sliceSource{docs: sink.Raws}, batchSize, false)
	return reply, true, err
}

// validate checks a collection (storage.Validate) and answers in
// MongoDB's shape. repair is refused; full, background, metadata,
// checkBSONConformance and enforceFastCount run the same complete check.
func (h *Handlers) validate(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"full", "background", "metadata", "checkBSONConformance", "enforceFastCount", "scandata"} {
		if _, err := getBool(req.Cmd, k, false); err != nil {
			return nil, err
		}
	}
	if repair, _ := getBool(req.Cmd, "repair", false); repair {
		return nil, mongoerr.New(mongoerr.NotImplemented, "validate with repair is not supported by tierdb")
	}
	col, err := h.store.Collection(ctx, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", req.DB, name)
	}
	if err != nil {
		return nil, err
	}
	v, err := h.store.Validate(ctx, col)
	if err != nil {
		return nil, err
	}
	keys, details := bson.D{}, bson.D{}
	for _, ix := range col.Indexes {
		keys = append(keys, bson.E{Key: ix.Name, Value: v.KeysPerIndex[ix.Name]})
		details = append(details, bson.E{Key: ix.Name, Value: bson.D{{Key: "valid", Value: v.Valid()}}})
	}
	errs, warnings := bson.A{}, bson.A{}
	for _, e := range v.Errors {
		errs = append(errs, e)
	}
	if v.Truncated {
		warnings = append(warnings, "more errors were found than are listed")
	}
	return bson.D{
		{Key: "ns", Value: col.Namespace()},
		{Key: "uuid", Value: uuidValue(col.UUID)},
		{Key: "nInvalidDocuments", Value: v.InvalidDocuments},
		{Key: "nNonCompliantDocuments", Value: v.InvalidDocuments},
		{Key: "nrecords", Value: v.Records},
		{Key: "nIndexes", Value: int64(len(col.Indexes))},
		{Key: "keysPerIndex", Value: keys},
		{Key: "indexDetails", Value: details},
		{Key: "valid", Value: v.Valid()},
		{Key: "repaired", Value: false},
		{Key: "warnings", Value: warnings},
		{Key: "errors", Value: errs},
		{Key: "extraIndexEntries", Value: bson.A{}},
		{Key: "missingIndexEntries", Value: bson.A{}},
		{Key: "corruptRecords", Value: bson.A{}},
	}, nil
}

// splitNS splits "db.collection" (the collection may contain dots).
func splitNS(what string, v any) (db, coll string, err error) {
	s, ok := v.(string)
	if !ok {
		return "", "", typeErr(what, "string", v)
	}
	db, coll, found := strings.Cut(s, ".")
	if !found || db == "" || coll == "" || validateDBName(db) != nil || strings.ContainsAny(coll, "$\x00") {
		return "", "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid %s namespace: %s", map[bool]string{true: "source", false: "target"}[what == "renameCollection"], s)
	}
	return db, coll, nil
}

// renameCollection: {renameCollection: "db.a", to: "db.b", dropTarget},
// run against admin, within a database or across databases.
func (h *Handlers) renameCollection(ctx context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "renameCollection may only be run against the admin database.")
	}
	fromDB, from, err := splitNS("renameCollection", req.Cmd[0].Value)
	if err != nil {
		return nil, err
	}
	toV, ok := lookup(req.Cmd, "to")
	if !ok {
		return nil, mongoerr.New(mongoerr.MissingField, "BSON field 'renameCollection.to' is missing but a required field")
	}
	toDB, to, err := splitNS("to", toV)
	if err != nil {
		return nil, err
	}
	var dropTarget bool
	switch v, _ := lookup(req.Cmd, "dropTarget"); v.(type) {
	case bson.Binary:
		return nil, mongoerr.New(mongoerr.NotImplemented, "dropTarget as a UUID is not supported by tierdb; use true")
	default:
		if dropTarget, err = getBool(req.Cmd, "dropTarget", false); err != nil {
			return nil, err
		}
	}
	if _, err := getBool(req.Cmd, "stayTemp", false); err != nil {
		return nil, err
	}
	if fromDB == toDB && from == to {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	if strings.HasPrefix(from, "system.") || strings.HasPrefix(to, "system.") {
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "renaming system collections is not allowed: %s.%s to %s.%s", fromDB, from, toDB, to)
	}
	if len(toDB)+1+len(to) > 255 {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: 255", toDB, to)
	}
	if err := h.mayRename(req.Session, fromDB, from, toDB, to, dropTarget); err != nil {
		return nil, err
	}
	return bson.D{}, h.store.RenameCollection(ctx, fromDB, from, toDB, to, dropTarget)
}

// mayRename is MongoDB's check: renameCollectionSameDB on the database
// within one; across databases find and dropCollection on the source and
// insert, createIndex and createCollection on the target; dropTarget also
// needs dropCollection on the target.
func (h *Handlers) mayRename(s *Session, fromDB, from, toDB, to string, dropTarget bool) error {
	reg := h.opts.Auth
	if reg == nil || !reg.Required() || s == nil || s.User == nil {
		return nil // the dispatch wrapper let an unauthenticated caller in only without access control
	}
	g := s.User.Grants
	ok := true
	if fromDB == toDB {
		ok = g.Allows(fromDB, from, auth.Actions(auth.ActRenameCollectionSameDB)) && g.Allows(toDB, to, auth.Actions(auth.ActRenameCollectionSameDB))
	} else {
		ok = g.Allows(fromDB, from, auth.Actions(auth.ActFind, auth.ActDropCollection)) &&
			g.Allows(toDB, to, auth.Actions(auth.ActInsert, auth.ActCreateIndex, auth.ActCreateCollection))
	}
	if ok && dropTarget {
		ok = g.Allows(toDB, to, auth.Actions(auth.ActDropCollection))
	}
	if !ok {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on admin to execute command { renameCollection }")
	}
	return nil
}
