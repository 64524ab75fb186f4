package commands

import (
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// The handler tests send OP_MSG command documents, as a driver encodes
// them, through the command table over the fake store (no PostgreSQL),
// and check the replies.

// get is the value at a dotted path of d (array elements by index).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case bson.D:
			var ok bool
			if v, ok = lookup(x, p.(string)); !ok {
				t.Fatalf("%v: no %v in %v", path, p, x)
			}
		case bson.A:
			i := p.(int)
			if i >= len(x) {
				t.Fatalf("%v: no element %d in %v", path, i, x)
			}
			v = x[i]
		default:
			t.Fatalf("%v: %v is not a document or array", path, v)
		}
	}
	return v
}

// ok fails unless reply is a success.
func ok(t *testing.T, reply bson.D) bson.D {
	t.Helper()
	if v, _ := lookup(reply, "ok"); v != 1.0 {
		t.Fatalf("reply %v", reply)
	}
	return reply
}

// failsWith fails unless reply is an error with code.
func failsWith(t *testing.T, reply bson.D, code mongoerr.Code) {
	t.Helper()
	if v, _ := lookup(reply, "ok"); v != 0.0 {
		t.Fatalf("reply %v, want code %d", reply, code)
	}
	if c, _ := lookup(reply, "code"); c != int32(code) {
		t.Fatalf("reply %v, want code %d", reply, code)
	}
}

// ids are the _id values of a batch, as a string.
func ids(t *testing.T, batch any) string {
	t.Helper()
	var out []string
	for _, d := range batch.(bson.A) {
		out = append(out, fmt.Sprint(get(t, d.(bson.D), "_id")))
	}
	return fmt.Sprint(out)
}

func doc(kv ...any) bson.D {
	var d bson.D
	for i := 0; i < len(kv); i += 2 {
		d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return d
}

// seed inserts _id 1..5 with a = _id % 2 and b = 10 * _id into test.c,
// through the insert command with its documents as a sequence.
func seed(t *testing.T, h *Handlers) {
	t.Helper()
	var docs bson.A
	for i := int32(1); i <= 5; i++ {
		docs = append(docs, doc("_id", i, "a", i%2, "b", 10*i))
	}
	r := ok(t, run(t, h, "test", doc("insert", "c", "documents", docs), "documents"))
	if get(t, r, "n") != int32(5) {
		t.Fatalf("insert: %v", r)
	}
}

func TestHandlersInsertAndFind(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	if n := len(st.Docs("test", "c")); n != 5 {
		t.Fatalf("%d documents stored", n)
	}
	// A duplicate _id is a write error of that document; the others are inserted.
	r := ok(t, run(t, h, "test", doc("insert", "c", "ordered", false, "documents", bson.A{doc("_id", int32(1)), doc("_id", int32(6))}), "documents"))
	if get(t, r, "n") != int32(1) || get(t, r, "writeErrors", 0, "index") != int32(0) || get(t, r, "writeErrors", 0, "code") != int32(mongoerr.DuplicateKey) {
		t.Fatalf("insert with a duplicate: %v", r)
	}

	r = ok(t, run(t, h, "test", doc("find", "c", "filter", doc("a", int32(1)), "sort", doc("b", int32(-1)), "projection", doc("b", int32(1)))))
	batch := get(t, r, "cursor", "firstBatch")
	if ids(t, batch) != "[5 3 1]" || get(t, r, "cursor", "id") != int64(0) || get(t, r, "cursor", "ns") != "test.c" {
		t.Fatalf("find: %v", r)
	}
	if d := get(t, batch, 0).(bson.D); len(d) != 2 || d[1].Key != "b" {
		t.Fatalf("projection: %v", d)
	}

	// A cursor: the first batch, then getMore to the end.
	r = ok(t, run(t, h, "test", doc("find", "c", "batchSize", int32(2))))
	id := get(t, r, "cursor", "id").(int64)
	if ids(t, get(t, r, "cursor", "firstBatch")) != "[1 2]" || id == 0 {
		t.Fatalf("first batch: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("getMore", id, "collection", "c")))
	if ids(t, get(t, r, "cursor", "nextBatch")) != "[3 4 5 6]" || get(t, r, "cursor", "id") != int64(0) {
		t.Fatalf("getMore: %v", r)
	}
	// A find on a missing collection is an empty batch.
	r = ok(t, run(t, h, "test", doc("find", "nothing")))
	if len(get(t, r, "cursor", "firstBatch").(bson.A)) != 0 {
		t.Fatalf("find on a missing collection: %v", r)
	}
}

func TestHandlersUpdateDelete(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	r := ok(t, run(t, h, "test", doc("update", "c", "updates", bson.A{
		doc("q", doc("a", int32(1)), "u", doc("$inc", doc("b", int32(1))), "multi", true),
		doc("q", doc("_id", int32(9)), "u", doc("$set", doc("b", int32(90))), "upsert", true),
	}), "updates"))
	if get(t, r, "n") != int32(4) || get(t, r, "nModified") != int32(3) || get(t, r, "upserted", 0, "index") != int32(1) ||
		get(t, r, "upserted", 0, "_id") != int32(9) {
		t.Fatalf("update: %v", r)
	}
	want := map[int32]int32{1: 11, 2: 20, 3: 31, 4: 40, 5: 51, 9: 90}
	for _, d := range st.Docs("test", "c") {
		id, b := get(t, d, "_id").(int32), get(t, d, "b").(int32)
		if want[id] != b {
			t.Fatalf("after update: %v", st.Docs("test", "c"))
		}
	}

	r = ok(t, run(t, h, "test", doc("delete", "c", "deletes", bson.A{doc("q", doc("b", doc("$gt", int32(35))), "limit", int32(0))}), "deletes"))
	if get(t, r, "n") != int32(3) || len(st.Docs("test", "c")) != 3 {
		t.Fatalf("delete: %v, left %v", r, st.Docs("test", "c"))
	}

	r = ok(t, run(t, h, "test", doc("findAndModify", "c", "query", doc("_id", int32(2)), "update", doc("$set", doc("x", true)), "new", true)))
	if get(t, r, "value", "x") != true || get(t, r, "lastErrorObject", "updatedExisting") != true {
		t.Fatalf("findAndModify: %v", r)
	}
}

func TestHandlersCountDistinctAggregate(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	r := ok(t, run(t, h, "test", doc("count", "c")))
	if get(t, r, "n") != int32(5) {
		t.Fatalf("count: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("count", "c", "query", doc("a", int32(0)), "skip", int32(1))))
	if get(t, r, "n") != int32(1) {
		t.Fatalf("count with a filter and skip: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("distinct", "c", "key", "a")))
	if fmt.Sprint(get(t, r, "values")) != "[0 1]" {
		t.Fatalf("distinct: %v", r)
	}

	r = ok(t, run(t, h, "test", doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{
		doc("$match", doc("b", doc("$gte", int32(20)))),
		doc("$group", doc("_id", "$a", "total", doc("$sum", "$b"))),
		doc("$sort", doc("_id", int32(1))),
	})))
	batch := get(t, r, "cursor", "firstBatch")
	if ids(t, batch) != "[0 1]" || get(t, batch, 0, "total") != int32(60) || get(t, batch, 1, "total") != int32(80) {
		t.Fatalf("aggregate: %v", r)
	}

	// A find and a count on a view run after the view's pipeline.
	ok(t, run(t, h, "test", doc("create", "odds", "viewOn", "c", "pipeline", bson.A{doc("$match", doc("a", int32(1)))})))
	r = ok(t, run(t, h, "test", doc("find", "odds", "filter", doc("b", doc("$gt", int32(10))), "sort", doc("_id", int32(-1)))))
	if ids(t, get(t, r, "cursor", "firstBatch")) != "[5 3]" {
		t.Fatalf("find on a view: %v", r)
	}
	if r = ok(t, run(t, h, "test", doc("count", "odds"))); get(t, r, "n") != int32(3) {
		t.Fatalf("count on a view: %v", r)
	}

	// $out replaces its target; $merge updates the matches and inserts the rest.
	ok(t, run(t, h, "test", doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{
		doc("$match", doc("a", int32(1))), doc("$out", "odd"),
	})))
	if got := st.Docs("test", "odd"); len(got) != 3 {
		t.Fatalf("$out wrote %v", got)
	}
	ok(t, run(t, h, "test", doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{
		doc("$match", doc("_id", doc("$lte", int32(2)))), doc("$project", doc("m", doc("$literal", true))), doc("$merge", "odd"),
	})))
	got := st.Docs("test", "odd")
	if len(got) != 4 || get(t, got[0], "m") != true || get(t, got[0], "b") != int32(10) || get(t, got[3], "_id") != int32(2) {
		t.Fatalf("$merge wrote %v", got)
	}
}

func TestHandlersDDL(t *testing.T) {
	h, _ := newFakeHandlers(t)
	ok(t, run(t, h, "test", doc("create", "c")))
	failsWith(t, run(t, h, "test", doc("create", "c")), mongoerr.NamespaceExists)
	ok(t, run(t, h, "test", doc("create", "v", "viewOn", "c", "pipeline", bson.A{doc("$match", doc("a", int32(1)))})))

	r := ok(t, run(t, h, "test", doc("listCollections", int32(1))))
	var names []string
	for _, d := range get(t, r, "cursor", "firstBatch").(bson.A) {
		names = append(names, fmt.Sprint(get(t, d.(bson.D), "name"), ":", get(t, d.(bson.D), "type")))
	}
	if slices.Sort(names); fmt.Sprint(names) != "[c:collection v:view]" {
		t.Fatalf("listCollections: %v", r)
	}

	r = ok(t, run(t, h, "test", doc("createIndexes", "d", "indexes", bson.A{doc("key", doc("a", int32(1)), "name", "a_1")})))
	if get(t, r, "numIndexesBefore") != int32(1) || get(t, r, "numIndexesAfter") != int32(2) || get(t, r, "createdCollectionAutomatically") != true {
		t.Fatalf("createIndexes: %v", r)
	}
	// The same spec again changes nothing; the same name with other keys is refused.
	r = ok(t, run(t, h, "test", doc("createIndexes", "d", "indexes", bson.A{doc("key", doc("a", int32(1)), "name", "a_1")})))
	if get(t, r, "numIndexesAfter") != int32(2) {
		t.Fatalf("createIndexes again: %v", r)
	}
	failsWith(t, run(t, h, "test", doc("createIndexes", "d", "indexes", bson.A{doc("key", doc("b", int32(1)), "name", "a_1")})), mongoerr.IndexKeySpecsConflict)

	r = ok(t, run(t, h, "test", doc("listIndexes", "d")))
	batch := get(t, r, "cursor", "firstBatch")
	if get(t, batch, 0, "name") != "_id_" || get(t, batch, 1, "name") != "a_1" || get(t, batch, 1, "key", "a") != int32(1) {
		t.Fatalf("listIndexes: %v", r)
	}
	ok(t, run(t, h, "test", doc("dropIndexes", "d", "index", "a_1")))
	if r = ok(t, run(t, h, "test", doc("listIndexes", "d"))); len(get(t, r, "cursor", "firstBatch").(bson.A)) != 1 {
		t.Fatalf("listIndexes after dropIndexes: %v", r)
	}

	if r = ok(t, run(t, h, "test", doc("drop", "c"))); get(t, r, "ns") != "test.c" {
		t.Fatalf("drop: %v", r)
	}
	ok(t, run(t, h, "test", doc("drop", "v")))
	// MongoDB 7 answers a drop of a missing collection with ok.
	if r = ok(t, run(t, h, "test", doc("drop", "c"))); len(r) != 1 {
		t.Fatalf("drop of a missing collection: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("listCollections", int32(1), "nameOnly", true)))
	if ids := get(t, r, "cursor", "firstBatch").(bson.A); len(ids) != 1 || get(t, ids[0].(bson.D), "name") != "d" {
		t.Fatalf("listCollections after drops: %v", r)
	}
}

// Errors reach the reply with MongoDB's codes.
func TestHandlersErrors(t *testing.T) {
	h, _ := newFakeHandlers(t)
	seed(t, h)
	failsWith(t, run(t, h, "test", doc("find", "c", "bogus", int32(1))), mongoerr.UnknownField)
	failsWith(t, run(t, h, "test", doc("listIndexes", "nothing")), mongoerr.NamespaceNotFound)
	failsWith(t, run(t, h, "test", doc("dropIndexes", "nothing", "index", "x")), mongoerr.NamespaceNotFound)
	failsWith(t, run(t, h, "test", doc("find", "c", "maxTimeMS", "soon")), mongoerr.BadValue)
	failsWith(t, run(t, h, "test", doc("find", "c", "filter", doc("a", doc("$bogus", int32(1))))), mongoerr.BadValue)
	failsWith(t, run(t, h, "test", doc("noSuchCommand", int32(1))), mongoerr.CommandNotFound)
}
