package changes

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/query"
)

// Kind is what a change did.
type Kind int

const (
	Insert Kind = iota
	Update
	Delete
	Drop    // a collection was dropped
	Rename  // a collection was renamed (To)
	Replace // a whole document was replaced
	// DropDatabase follows the drops of a database's collections.
	DropDatabase
)

var kindNames = [...]string{Insert: "insert", Update: "update", Delete: "delete", Drop: "drop", Rename: "rename", Replace: "replace", DropDatabase: "dropDatabase"}

func (k Kind) String() string { return kindNames[k] }

// Change is one decoded change.
type Change struct {
	Pos      Position
	Time     time.Time // commit time
	Kind     Kind
	DB, Coll string
	// ToDB, ToColl: a rename's new namespace.
	ToDB, ToColl string
	// Old and New are the document before and after (raw BSON; Old needs
	// the table's REPLICA IDENTITY FULL).
	Old, New []byte
	// Txn is the message of the MongoDB transaction that made the change
	// (TxnMessage), nil for a change made outside one.
	Txn []byte
}

// size is what a buffered change holds, roughly.
func (c *Change) size() int {
	return 128 + len(c.DB) + len(c.Coll) + len(c.Old) + len(c.New) + len(c.Txn)
}

// Options shape events: fullDocument and fullDocumentBeforeChange.
type Options struct {
	// FullDocument: "default", "updateLookup", "whenAvailable", "required".
	FullDocument string
	// BeforeChange: "off", "whenAvailable", "required".
	BeforeChange string
	// Lookup returns the current version of a document for updateLookup
	// (nil when it no longer exists).
	Lookup func(db, coll string, id any) (bson.D, error)
}

// Event shapes the change as MongoDB's change event.
func (c *Change) Event(o Options) (bson.D, error) {
	ev := bson.D{
		{Key: "_id", Value: c.Pos.Token()},
		{Key: "operationType", Value: c.Kind.String()},
		{Key: "clusterTime", Value: clusterTime(c)},
		{Key: "wallTime", Value: bson.NewDateTimeFromTime(c.Time)},
	}
	if c.Kind == DropDatabase {
		return append(ev, bson.E{Key: "ns", Value: bson.D{{Key: "db", Value: c.DB}}}), nil
	}
	if c.Kind == Drop || c.Kind == Rename {
		ev = append(ev, bson.E{Key: "ns", Value: bson.D{{Key: "db", Value: c.DB}, {Key: "coll", Value: c.Coll}}})
		if c.Kind == Rename {
			ev = append(ev, bson.E{Key: "to", Value: bson.D{{Key: "db", Value: c.ToDB}, {Key: "coll", Value: c.ToColl}}})
		}
		return ev, nil
	}
	var oldDoc, newDoc bson.D
	var err error
	if c.Old != nil {
		if oldDoc, err = bsonx.Decode(c.Old); err != nil {
			return nil, err
		}
	}
	if c.New != nil {
		if newDoc, err = bsonx.Decode(c.New); err != nil {
			return nil, err
		}
	}
	key := newDoc
	if key == nil {
		key = oldDoc
	}
	id, _ := query.Lookup(key, "_id")
	switch c.Kind {
	case Insert, Replace:
		ev = append(ev, bson.E{Key: "fullDocument", Value: newDoc})
	case Update:
		switch o.FullDocument {
		case "updateLookup":
			var cur any
			if o.Lookup != nil {
				d, err := o.Lookup(c.DB, c.Coll, id)
				if err != nil {
					return nil, err
				}
				if d != nil {
					cur = d
				}
			}
			ev = append(ev, bson.E{Key: "fullDocument", Value: cur})
		case "whenAvailable", "required":
			ev = append(ev, bson.E{Key: "fullDocument", Value: newDoc})
		}
	}
	ev = append(ev,
		bson.E{Key: "ns", Value: bson.D{{Key: "db", Value: c.DB}, {Key: "coll", Value: c.Coll}}},
		bson.E{Key: "documentKey", Value: bson.D{{Key: "_id", Value: id}}})
	if c.Kind == Update {
		if oldDoc != nil {
			ev = append(ev, bson.E{Key: "updateDescription", Value: Diff(oldDoc, newDoc)})
		}
	}
	if o.BeforeChange == "whenAvailable" || o.BeforeChange == "required" {
		if c.Kind == Update || c.Kind == Replace || c.Kind == Delete {
			var before any
			if oldDoc != nil {
				before = oldDoc
			}
			ev = append(ev, bson.E{Key: "fullDocumentBeforeChange", Value: before})
		}
	}
	if c.Txn != nil {
		ev = append(ev, txnFields(c.Txn)...) // lsid, txnNumber
	}
	return ev, nil
}

// clusterTime stands in for MongoDB's operation time: the commit time in
// seconds and, as the increment, the low bits of the position, so events
// of one second keep their order within a transaction.
func clusterTime(c *Change) bson.Timestamp {
	return bson.Timestamp{T: uint32(c.Time.Unix()), I: c.Pos.Index + 1}
}

// Diff describes how old became new as an update event's updateDescription:
// fields set (with dotted paths into embedded documents present on both
// sides) and fields removed. Arrays that changed are reported whole.
func Diff(old, new bson.D) bson.D {
	updated := bson.D{}
	removed := bson.A{}
	diffInto(old, new, "", &updated, &removed)
	return bson.D{
		{Key: "updatedFields", Value: updated},
		{Key: "removedFields", Value: removed},
		{Key: "truncatedArrays", Value: bson.A{}},
	}
}

func diffInto(old, new bson.D, prefix string, updated *bson.D, removed *bson.A) {
	for _, e := range new {
		path := prefix + e.Key
		ov, had := lookupField(old, e.Key)
		switch {
		case !had:
			*updated = append(*updated, bson.E{Key: path, Value: e.Value})
		case sameValue(ov, e.Value):
		default:
			od, ok1 := ov.(bson.D)
			nd, ok2 := e.Value.(bson.D)
			if ok1 && ok2 && len(nd) > 0 {
				diffInto(od, nd, path+".", updated, removed)
			} else {
				*updated = append(*updated, bson.E{Key: path, Value: e.Value})
			}
		}
	}
	for _, e := range old {
		if _, ok := lookupField(new, e.Key); !ok {
			*removed = append(*removed, prefix+e.Key)
		}
	}
}

func lookupField(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// sameValue compares exactly, types included (1 and 1.0 differ, as a $set
// from one to the other is a change).
func sameValue(a, b any) bool {
	ra, err1 := bsonx.Marshal(bson.D{{Key: "v", Value: a}})
	rb, err2 := bsonx.Marshal(bson.D{{Key: "v", Value: b}})
	return err1 == nil && err2 == nil && string(ra) == string(rb)
}

// Scope is what a stream watches: one collection, one database, or the
// whole deployment (Cluster).
type Scope struct {
	DB, Coll string
	Cluster  bool
}

// internalDB reports databases whose changes no stream reports.
func internalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// Matches reports whether the change belongs to the stream.
func (s Scope) Matches(c *Change) bool {
	switch {
	case s.Cluster:
		return !internalDB(c.DB)
	case s.Coll == "":
		return c.DB == s.DB
	}
	return c.Kind != DropDatabase && c.DB == s.DB && c.Coll == s.Coll ||
		c.Kind == Rename && c.ToDB == s.DB && c.ToColl == s.Coll
}

// Invalidates reports whether the change ends the stream (after it is
// reported): a collection stream ends when its collection is dropped or
// renamed (either way), a database stream when its database is dropped.
func (s Scope) Invalidates(c *Change) bool {
	switch {
	case s.Cluster:
		return false
	case s.Coll == "":
		return c.Kind == DropDatabase && c.DB == s.DB
	}
	return (c.Kind == Drop || c.Kind == Rename) && s.Matches(c)
}

// InvalidateEvent is the event that ends a stream after the change c.
func InvalidateEvent(c *Change) bson.D {
	return bson.D{
		{Key: "_id", Value: invalidateToken(c.Pos)},
		{Key: "operationType", Value: "invalidate"},
		{Key: "clusterTime", Value: clusterTime(c)},
		{Key: "wallTime", Value: bson.NewDateTimeFromTime(c.Time)},
	}
}
