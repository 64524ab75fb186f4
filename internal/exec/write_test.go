package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
	"tierdb/internal/update"
)

func writer(f *fakeStore) *Write {
	w := &Write{Store: f, DB: "db", Name: "c"}
	if !f.w.missing {
		w.Col, _ = f.Collection(context.Background(), storage.On{}, "db", "c")
	}
	return w
}

func parseUpdate(t *testing.T, u any) *update.Update {
	t.Helper()
	upd, err := update.Parse(u)
	mustNoErr(t, err)
	return upd
}

var incN = bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}

func updateStmt(t *testing.T, q bson.D, u any, multi, upsert bool) UpdateStatement {
	return UpdateStatement{Query: q, Spec: spec(t, q, nil, nil, 0, 0), Update: parseUpdate(t, u), Multi: multi, Upsert: upsert}
}

func field(d bson.D, k string) any {
	v, _ := lookupField(d, k)
	return v
}

// A lost swap is not retried optimistically: the update locks the row and
// goes on top of the rival's change under the lock, once, however often
// rivals would have won again.
func TestUpdateFinishesALostSwapUnderTheRowLock(t *testing.T) {
	for _, lose := range []int{1, 1000} {
		f := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(1)}})
		f.w.lose = lose
		res, err := writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "x", Value: int32(1)}}, incN, false, false))
		mustNoErr(t, err)
		if res.Matched != 1 || res.Modified != 1 {
			t.Fatalf("lose %d: result %+v, want 1 matched and modified", lose, res)
		}
		d := f.Docs()[0]
		if field(d, "rival") != int32(1) || field(d, "n") != int32(1) {
			t.Fatalf("lose %d: stored %v: want the update applied once on top of one rival", lose, d)
		}
		if f.w.lost != 1 || f.w.gets != 0 || f.w.locks != 1 || f.w.lockedWrites != 1 {
			t.Fatalf("lose %d: %d losses, %d gets, %d locks, %d writes under a lock; want 1, 0, 1, 1",
				lose, f.w.lost, f.w.gets, f.w.locks, f.w.lockedWrites)
		}
		if last := f.on[len(f.on)-1]; last != lockedOn {
			t.Fatalf("lose %d: the write under the lock ran on %+v, not the lock's On", lose, last)
		}
	}
}

func TestUpdateRechecksAChangedDocument(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		f := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(1)}})
		f.w.lose = 1
		f.w.rival = func(d bson.D) bson.D { return withField(d, "x", int32(0)) }
		res, err := writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "x", Value: int32(1)}}, incN, false, upsert))
		mustNoErr(t, err)
		if res.Matched != 0 || res.Modified != 0 {
			t.Fatalf("upsert %v: result %+v; the document no longer matches", upsert, res)
		}
		if field(f.Docs()[0], "n") != nil {
			t.Fatalf("upsert %v: updated a document that no longer matches: %v", upsert, f.Docs()[0])
		}
		if upsert != (res.UpsertedID != nil) || upsert != (len(f.Rows) == 2) {
			t.Fatalf("upsert %v: upserted %v, %d documents", upsert, res.UpsertedID, len(f.Rows))
		}
	}
}

func TestUpdateExprErrorOnARecheckFailsTheStatement(t *testing.T) {
	f := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "d", Value: int32(2)}})
	f.w.lose = 1
	f.w.rival = func(d bson.D) bson.D { return withField(d, "d", int32(0)) }
	q := bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{
		bson.D{{Key: "$divide", Value: bson.A{int32(10), "$d"}}}, int32(1)}}}}}
	_, err := writer(f).Update(context.Background(), updateStmt(t, q, incN, false, false))
	if err == nil {
		t.Fatal("a $divide by zero while rechecking the changed document did not fail the statement")
	}
}

func TestUpdateMultiAndSingle(t *testing.T) {
	docs := func() []bson.D {
		return []bson.D{
			{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(1)}},
			{{Key: "_id", Value: int32(2)}, {Key: "x", Value: int32(2)}},
			{{Key: "_id", Value: int32(3)}, {Key: "x", Value: int32(1)}},
			{{Key: "_id", Value: int32(4)}, {Key: "x", Value: int32(1)}},
		}
	}
	for _, multi := range []bool{false, true} {
		f := newFakeStore(t, docs()...)
		res, err := writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "x", Value: int32(1)}}, incN, multi, false))
		mustNoErr(t, err)
		want := map[int32]bool{1: true}
		if multi {
			want = map[int32]bool{1: true, 3: true, 4: true}
		}
		if res.Matched != int64(len(want)) || res.Modified != int64(len(want)) {
			t.Fatalf("multi %v: result %+v", multi, res)
		}
		for _, d := range f.Docs() {
			if id := field(d, "_id").(int32); want[id] != (field(d, "n") == int32(1)) {
				t.Fatalf("multi %v: document %v", multi, d)
			}
		}
	}
}

func TestUpsertInsertsThenMatches(t *testing.T) {
	f := newFakeStore(t)
	f.w.missing = true
	w := writer(f)
	st := updateStmt(t, bson.D{{Key: "k", Value: "a"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: int32(1)}}}}, false, true)
	res, err := w.Update(context.Background(), st)
	mustNoErr(t, err)
	if res.UpsertedID == nil || res.Matched != 0 || f.w.created != 1 || len(f.Rows) != 1 {
		t.Fatalf("first upsert: %+v, %d created, %d documents", res, f.w.created, len(f.Rows))
	}
	d := f.Docs()[0]
	if field(d, "_id") != res.UpsertedID || field(d, "k") != "a" || field(d, "v") != int32(1) {
		t.Fatalf("upserted %v (id %v)", d, res.UpsertedID)
	}
	res, err = w.Update(context.Background(), st)
	mustNoErr(t, err)
	if res.UpsertedID != nil || res.Matched != 1 || res.Modified != 0 || len(f.Rows) != 1 {
		t.Fatalf("second upsert: %+v, %d documents; want it to match the first's", res, len(f.Rows))
	}
}

func TestUpsertLosingTheInsertRaceUpdatesTheRivalsDocument(t *testing.T) {
	f := newFakeStore(t)
	f.w.missing = true
	f.w.rivalInsert = bson.D{{Key: "_id", Value: int32(5)}, {Key: "n", Value: int32(10)}}
	res, err := writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "_id", Value: int32(5)}}, incN, false, true))
	mustNoErr(t, err)
	if res.UpsertedID != nil || res.Matched != 1 || res.Modified != 1 {
		t.Fatalf("result %+v; want the rival's document updated", res)
	}
	if len(f.Rows) != 1 || field(f.Docs()[0], "n") != int32(11) {
		t.Fatalf("stored %v", f.Docs())
	}
}

func TestMissingCollectionWithoutUpsertWritesNothing(t *testing.T) {
	f := newFakeStore(t)
	f.w.missing = true
	w := writer(f)
	res, err := w.Update(context.Background(), updateStmt(t, bson.D{}, incN, true, false))
	mustNoErr(t, err)
	n, err := w.Delete(context.Background(), spec(t, nil, nil, nil, 0, 0), false)
	mustNoErr(t, err)
	if res != (UpdateResult{}) || n != 0 || f.w.created != 0 {
		t.Fatalf("update %+v, deleted %d, %d collections created", res, n, f.w.created)
	}
}

func TestUpdateByIDSwapsTheLastWrittenVersion(t *testing.T) {
	f := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: int32(1)}})
	f.w.remember = true
	f.remember(f.Rows[0])
	q := bson.D{{Key: "_id", Value: int32(1)}}
	res, err := writer(f).Update(context.Background(), updateStmt(t, q, incN, false, false))
	mustNoErr(t, err)
	if res.Matched != 1 || res.Modified != 1 || len(f.calls) != 0 || field(f.Docs()[0], "n") != int32(2) {
		t.Fatalf("result %+v, %d scans, stored %v; want no read", res, len(f.calls), f.Docs())
	}
	// A stale remembered version: the swap fails and the update reads
	// the stored one.
	f.w.versions[string(f.Rows[0].Key)] = mustMarshal(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: int32(100)}})
	res, err = writer(f).Update(context.Background(), updateStmt(t, q, incN, false, false))
	mustNoErr(t, err)
	if res.Matched != 1 || res.Modified != 1 || len(f.calls) == 0 || field(f.Docs()[0], "n") != int32(3) {
		t.Fatalf("result %+v, %d scans, stored %v; want n 3 from the stored version", res, len(f.calls), f.Docs())
	}
}

// An update by _id of a hot document (Store.Hot) takes the row lock first
// and updates under it: no swap outside the lock, no read of its own. With
// no such document, the usual path decides (here: an upsert inserts).
func TestUpdateByIDOfAHotDocumentLocksFirst(t *testing.T) {
	f := newFakeStore(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: int32(1)}})
	f.w.hot = true
	f.w.lose = 1000 // a swap outside the lock would lose
	res, err := writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "_id", Value: int32(1)}}, incN, false, false))
	mustNoErr(t, err)
	if res.Matched != 1 || res.Modified != 1 || field(f.Docs()[0], "n") != int32(2) || field(f.Docs()[0], "rival") != nil {
		t.Fatalf("result %+v, stored %v", res, f.Docs())
	}
	if f.w.lost != 0 || f.w.locks != 1 || f.w.lockedWrites != 1 || len(f.calls) != 0 || f.w.gets != 0 {
		t.Fatalf("%d losses, %d locks, %d writes under a lock, %d scans, %d gets; want 0, 1, 1, 0, 0",
			f.w.lost, f.w.locks, f.w.lockedWrites, len(f.calls), f.w.gets)
	}
	if last := f.on[len(f.on)-1]; last != lockedOn {
		t.Fatalf("the write ran on %+v, not the lock's On", last)
	}
	res, err = writer(f).Update(context.Background(), updateStmt(t, bson.D{{Key: "_id", Value: int32(2)}}, incN, false, true))
	mustNoErr(t, err)
	if res.UpsertedID != int32(2) || len(f.Rows) != 2 {
		t.Fatalf("upsert of a missing hot document: %+v, %d documents", res, len(f.Rows))
	}
}

func threeDocs() []bson.D {
	return []bson.D{
		{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(1)}},
		{{Key: "_id", Value: int32(2)}, {Key: "x", Value: int32(1)}},
		{{Key: "_id", Value: int32(3)}, {Key: "x", Value: int32(2)}},
	}
}

func storedIDs(f *fakeStore) []int32 {
	var out []int32
	for _, d := range f.Docs() {
		out = append(out, field(d, "_id").(int32))
	}
	return out
}

func TestDeleteLimitOneAndAll(t *testing.T) {
	q := bson.D{{Key: "x", Value: int32(1)}}
	f := newFakeStore(t, threeDocs()...)
	n, err := writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), true)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 1 || len(got) != 2 || got[0] != 2 {
		t.Fatalf("limit 1 deleted %d, left %v", n, got)
	}
	f = newFakeStore(t, threeDocs()...)
	n, err = writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), false)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 2 || len(got) != 1 || got[0] != 3 {
		t.Fatalf("limit 0 deleted %d, left %v", n, got)
	}
}

// A multi-document delete whose compare-and-delete loses to a concurrent
// change still deletes the document if it still matches (under its row
// lock), and leaves it if it no longer does.
func TestDeleteManyRechecksChangedDocuments(t *testing.T) {
	q := bson.D{{Key: "x", Value: int32(1)}}
	f := newFakeStore(t, threeDocs()...)
	f.w.lose = 1 // the first match gets a field the filter does not read
	n, err := writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), false)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 2 || len(got) != 1 || got[0] != 3 || f.w.locks != 1 {
		t.Fatalf("deleted %d, left %v, %d locks; want both matches deleted, one under its lock", n, got, f.w.locks)
	}
	f = newFakeStore(t, threeDocs()...)
	f.w.lose = 1
	f.w.rival = func(d bson.D) bson.D { return withField(d, "x", int32(0)) }
	n, err = writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), false)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 1 || len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("deleted %d, left %v; want the changed document kept", n, got)
	}
}

func TestDeleteOneRechecksAndLocks(t *testing.T) {
	q := bson.D{{Key: "x", Value: int32(1)}}
	// The first match changes so that it no longer matches: the next one
	// is deleted instead.
	f := newFakeStore(t, threeDocs()...)
	f.w.lose = 1
	f.w.rival = func(d bson.D) bson.D { return withField(d, "x", int32(0)) }
	n, err := writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), true)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 1 || len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("deleted %d, left %v; want 2 deleted", n, got)
	}
	// A match that keeps changing (and matching) is deleted under its lock.
	f = newFakeStore(t, threeDocs()...)
	f.w.lose = 1000
	n, err = writer(f).Delete(context.Background(), spec(t, q, nil, nil, 0, 0), true)
	mustNoErr(t, err)
	if got := storedIDs(f); n != 1 || len(got) != 2 || got[0] != 2 || f.w.locks != 1 || f.w.lockedWrites != 1 {
		t.Fatalf("deleted %d, left %v, %d locks", n, got, f.w.locks)
	}
}

func TestFindAndModify(t *testing.T) {
	sortDesc := bson.D{{Key: "x", Value: int32(-1)}}
	fm := func(t *testing.T, q bson.D, u any) FindAndModify {
		x := FindAndModify{Spec: spec(t, q, sortDesc, nil, 0, 1)}
		if u != nil {
			x.Update = parseUpdate(t, u)
		}
		return x
	}
	ctx := context.Background()

	// Update the first in sort order; the value is the document before.
	f := newFakeStore(t, threeDocs()...)
	res, err := writer(f).FindAndModify(ctx, fm(t, nil, incN))
	mustNoErr(t, err)
	if res.N != 1 || !res.UpdatedExisting || field(res.Value, "_id") != int32(3) || field(res.Value, "n") != nil {
		t.Fatalf("update: %+v", res)
	}
	// With new: after; and a lost swap shows the rival's change in it.
	f.w.lose = 1
	x := fm(t, nil, incN)
	x.ReturnNew = true
	res, err = writer(f).FindAndModify(ctx, x)
	mustNoErr(t, err)
	if field(res.Value, "n") != int32(2) || field(res.Value, "rival") != int32(1) {
		t.Fatalf("new: %+v", res)
	}
	// Remove.
	x = fm(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(1)}}, nil)
	x.Remove = true
	res, err = writer(f).FindAndModify(ctx, x)
	mustNoErr(t, err)
	if got := storedIDs(f); res.N != 1 || field(res.Value, "_id") != int32(1) || len(got) != 2 {
		t.Fatalf("remove: %+v, left %v", res, got)
	}
	// No match, then an upsert returning the new document.
	x = fm(t, bson.D{{Key: "x", Value: int32(9)}}, incN)
	res, err = writer(f).FindAndModify(ctx, x)
	mustNoErr(t, err)
	if res.N != 0 || res.Value != nil || len(f.Rows) != 2 {
		t.Fatalf("no match: %+v", res)
	}
	x.Upsert, x.ReturnNew = true, true
	res, err = writer(f).FindAndModify(ctx, x)
	mustNoErr(t, err)
	if res.N != 1 || res.UpdatedExisting || res.UpsertedID == nil || field(res.Value, "x") != int32(9) || len(f.Rows) != 3 {
		t.Fatalf("upsert: %+v", res)
	}
}

func TestInsertCreatesTheCollection(t *testing.T) {
	f := newFakeStore(t)
	f.w.missing = true
	doc, err := PrepareDoc(bson.D{{Key: "a", Value: int32(1)}})
	mustNoErr(t, err)
	w := writer(f)
	n, werrs, err := w.Insert(context.Background(), []storage.Doc{doc, doc}, true)
	mustNoErr(t, err)
	if n != 1 || len(werrs) != 1 || werrs[0].Index != 1 || !storage.IsCode(werrs[0].Err, storage.ErrDuplicateKey) || f.w.created != 1 || w.Col == nil {
		t.Fatalf("inserted %d, errors %v, %d created", n, werrs, f.w.created)
	}
	if field(doc.D, "_id") == nil {
		t.Fatal("PrepareDoc gave no _id")
	}
}
