package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// validate and renameCollection: mongosh's coll.validate() and
// coll.renameCollection().

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
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", req.DB, name)
	}
	if err != nil {
		return nil, err
	}
	v, err := h.store.Validate(ctx, req.on, col)
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
	return bson.D{}, h.store.RenameCollection(ctx, req.on, fromDB, from, toDB, to, dropTarget)
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

// cappedConversion answers convertToCapped and cloneCollectionAsCapped,
// which tierdb does not implement: NotImplemented, never CommandNotFound,
// since MongoDB has both and a client should learn that this server lacks
// them, not that it mistyped. A capped collection is made with create
// (capped: true, size, max) and filled by the client.
func cappedConversion(name string) handlerFunc {
	return func(context.Context, *Request) (bson.D, error) {
		return nil, mongoerr.Newf(mongoerr.NotImplemented, "%s is not supported by tierdb: create a capped collection with create (capped: true, size, max) and copy the documents into it", name)
	}
}
