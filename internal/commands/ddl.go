package commands

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

func (h *Handlers) listDatabases(ctx context.Context, req *Request) (bson.D, error) {
	filter, nameOnly, err := listOptions(req.Cmd)
	if err != nil {
		return nil, err
	}
	dbs, err := h.store.ListDatabases(ctx, req.on)
	if err != nil {
		return nil, err
	}
	out := bson.A{}
	var total int64
	for _, d := range dbs {
		info := bson.D{{Key: "name", Value: d.Name}}
		if !nameOnly {
			info = append(info, bson.E{Key: "sizeOnDisk", Value: d.SizeOnDisk}, bson.E{Key: "empty", Value: false})
		}
		if !filter.Match(info) {
			continue
		}
		total += d.SizeOnDisk
		out = append(out, info)
	}
	if nameOnly {
		return bson.D{{Key: "databases", Value: out}}, nil
	}
	return bson.D{{Key: "databases", Value: out}, {Key: "totalSize", Value: total}, {Key: "totalSizeMb", Value: total >> 20}}, nil
}

// listOptions reads the filter and nameOnly options of the list commands.
func listOptions(cmd bson.D) (*query.Filter, bool, error) {
	filterDoc, err := getDoc(cmd, "filter")
	if err != nil {
		return nil, false, err
	}
	filter, err := query.ParseFilter(filterDoc)
	if err != nil {
		return nil, false, err
	}
	nameOnly, err := getBool(cmd, "nameOnly", false)
	return filter, nameOnly, err
}

func (h *Handlers) listCollections(ctx context.Context, req *Request) (bson.D, error) {
	filter, nameOnly, err := listOptions(req.Cmd)
	if err != nil {
		return nil, err
	}
	cols, err := h.store.ListCollections(ctx, req.on, req.DB)
	if err != nil {
		return nil, err
	}
	batch := bson.A{}
	for _, c := range cols {
		info := bson.D{{Key: "name", Value: c.Name}, {Key: "type", Value: "collection"}}
		if !nameOnly {
			info = append(info,
				bson.E{Key: "options", Value: collectionOptions(c)},
				bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}, {Key: "uuid", Value: uuidValue(c.UUID)}}},
				bson.E{Key: "idIndex", Value: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}},
			)
		}
		if filter.Match(info) {
			batch = append(batch, info)
		}
	}
	views, err := h.viewInfos(ctx, req.on, req.DB, filter, nameOnly)
	if err != nil {
		return nil, err
	}
	batch = append(batch, views...)
	return cursorReply(0, req.DB+".$cmd.listCollections", batch, true), nil
}

// uuidValue renders a catalog UUID as BSON binary subtype 4, as MongoDB does.
func uuidValue(s string) any {
	hex := strings.ReplaceAll(s, "-", "")
	var b [16]byte
	if len(hex) != 32 {
		return s
	}
	for i := 0; i < 16; i++ {
		if _, err := fmt.Sscanf(hex[2*i:2*i+2], "%02x", &b[i]); err != nil {
			return s
		}
	}
	return bson.Binary{Subtype: 4, Data: b[:]}
}

func (h *Handlers) create(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(name, "system.") {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid collection name: %s", name)
	}
	capped, err := cappedOptions(req.Cmd)
	if err != nil {
		return nil, err
	}
	if capped != nil {
		return bson.D{}, h.store.CreateCappedCollection(ctx, req.on, req.DB, name, *capped)
	}
	return bson.D{}, h.store.CreateCollection(ctx, req.on, req.DB, name)
}

func (h *Handlers) drop(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	err = h.store.DropCollection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		// MongoDB 7 answers ok for a missing collection; drivers rely on it.
		return bson.D{}, nil
	}
	if err != nil {
		return nil, err
	}
	h.cursors.killNamespace(req.DB + "." + name)
	return bson.D{{Key: "ns", Value: req.DB + "." + name}, {Key: "nIndexesWas", Value: int32(1)}}, nil
}

func (h *Handlers) dropDatabase(ctx context.Context, req *Request) (bson.D, error) {
	if err := h.store.DropDatabase(ctx, req.on, req.DB); err != nil {
		return nil, err
	}
	return bson.D{{Key: "dropped", Value: req.DB}}, nil
}

func (h *Handlers) createIndexes(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	if _, ok := lookup(req.Cmd, "indexes"); !ok {
		return nil, mongoerr.New(mongoerr.MissingField, "BSON field 'createIndexes.indexes' is missing but a required field")
	}
	specs, err := getArray(req.Cmd, "indexes")
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	var indexes []storage.Index
	for _, s := range specs {
		doc, ok := s.(bson.D)
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "each index specification must be an object")
		}
		ix, err := parseIndexSpec(doc)
		if err != nil {
			return nil, err
		}
		indexes = append(indexes, ix)
	}
	before, after, created, err := h.store.CreateIndexes(ctx, req.on, req.DB, name, indexes)
	if err != nil {
		return nil, err
	}
	reply := bson.D{
		{Key: "numIndexesBefore", Value: int32(before)},
		{Key: "numIndexesAfter", Value: int32(after)},
		{Key: "createdCollectionAutomatically", Value: created},
	}
	if before == after {
		reply = append(reply, bson.E{Key: "note", Value: "all indexes already exist"})
	}
	return reply, nil
}

func asNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case bson.Decimal128:
		f, err := decimalToFloat(n)
		return f, err == nil
	}
	return 0, false
}

func decimalToFloat(d bson.Decimal128) (float64, error) {
	var f float64
	_, err := fmt.Sscan(d.String(), &f)
	return f, err
}

func (h *Handlers) listIndexes(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if err != nil {
		return nil, err
	}
	batch := bson.A{}
	for i := range col.Indexes {
		batch = append(batch, indexInfo(&col.Indexes[i]))
	}
	return cursorReply(0, col.Namespace(), batch, true), nil
}

func (h *Handlers) dropIndexes(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	v, _ := lookup(req.Cmd, "index")
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case bson.A:
		for _, n := range x {
			s, ok := n.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "index names must be strings")
			}
			names = append(names, s)
		}
	case bson.D:
		col, err := h.store.Collection(ctx, req.on, req.DB, name)
		if err != nil {
			return nil, err
		}
		keys, err := parseIndexKey(x)
		if err != nil {
			return nil, err
		}
		spec := storage.Index{Keys: keys}
		for _, ix := range col.Indexes {
			if ix.SameKeys(&spec) {
				names = append(names, ix.Name)
			}
		}
		switch {
		case names == nil:
			return nil, mongoerr.Newf(mongoerr.IndexNotFound, "can't find index with key: %s", renderSpec(x))
		case len(names) > 1:
			return nil, mongoerr.Newf(mongoerr.AmbiguousIndexKeyPattern, "%d indexes found for key: %s, identify by name instead. Conflicting indexes: %s", len(names), renderSpec(x), strings.Join(names, ", "))
		}
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes 'index' must be a string, an array of strings or a key pattern")
	}
	var before int
	for _, n := range names {
		b, err := h.store.DropIndex(ctx, req.on, req.DB, name, n)
		if err != nil {
			return nil, err
		}
		if before == 0 {
			before = b
		}
	}
	return bson.D{{Key: "nIndexesWas", Value: int32(before)}}, nil
}

// cursorReply is the {cursor: {id, ns, firstBatch|nextBatch}} reply.
func cursorReply(id int64, ns string, batch bson.A, first bool) bson.D {
	key := "nextBatch"
	if first {
		key = "firstBatch"
	}
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: "id", Value: id},
		{Key: "ns", Value: ns},
		{Key: key, Value: batch},
	}}}
}
