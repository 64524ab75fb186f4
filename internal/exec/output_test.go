package exec

import (
	"context"
	"strings"
	"testing"

	"tierdb/internal/exec/exectest"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// StoreOutput over a store in memory: $out fills a new collection with
// the target's indexes and swaps it in at the end; a failed $out leaves
// the target as it was and no temporary collection behind.
func TestStoreOutputOut(t *testing.T) {
	st := exectest.NewStore()
	mustNoErr(t, st.Load("d", "t", parse(t, `{"_id":9}`)))
	_, _, _, err := st.CreateIndexes(context.Background(), storage.On{}, "d", "t", []storage.Index{{Name: "a_1", Keys: []storage.IndexKey{{Field: "a"}}}})
	mustNoErr(t, err)
	var replaced []string
	o := &StoreOutput{Store: st, Replaced: func(db, coll string) { replaced = append(replaced, db+"."+coll) }}
	_, err = run(t, &Env{Ctx: context.Background(), DB: "d", Output: o}, docs(t, `{"_id":1,"a":1}`, `{"_id":2,"a":2}`), parse(t, `{"$out":"t"}`))
	mustNoErr(t, err)
	o.Abort(context.Background())
	col, err := st.Collection(context.Background(), storage.On{}, "d", "t")
	mustNoErr(t, err)
	if got := st.Docs("d", "t"); len(got) != 2 || len(col.Indexes) != 2 || col.Indexes[1].Name != "a_1" || len(replaced) != 1 {
		t.Fatalf("after $out: %v, indexes %v, replaced %v", got, col.Indexes, replaced)
	}
	if names := collections(t, st, "d"); names != "t" {
		t.Fatalf("collections after $out: %s", names)
	}

	o = &StoreOutput{Store: st}
	_, err = run(t, &Env{Ctx: context.Background(), DB: "d", Output: o}, docs(t, `{"_id":1}`, `{"_id":1}`), parse(t, `{"$out":"t"}`))
	o.Abort(context.Background())
	if !storage.IsCode(err, storage.ErrDuplicateKey) || len(st.Docs("d", "t")) != 2 || collections(t, st, "d") != "t" {
		t.Fatalf("failed $out: %v, %v, collections %s", err, st.Docs("d", "t"), collections(t, st, "d"))
	}

	mustNoErr(t, st.CreateCappedCollection(context.Background(), storage.On{}, "d", "capped", storage.Capped{Size: 4096}))
	_, err = run(t, &Env{Ctx: context.Background(), DB: "d", Output: &StoreOutput{Store: st}}, docs(t, `{"_id":1}`), parse(t, `{"$out":"capped"}`))
	if !hasCode(err, mongoerr.Location17152) {
		t.Fatalf("$out to a capped collection: %v", err)
	}
}

func collections(t *testing.T, st *exectest.Store, db string) string {
	t.Helper()
	cols, err := st.ListCollections(context.Background(), storage.On{}, db)
	mustNoErr(t, err)
	var names []string
	for _, c := range cols {
		if c.Capped == nil {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, " ")
}

// $merge creates its target on the first insert, merges into the
// matches, needs a unique index for other 'on' fields, and asks Check
// first.
func TestStoreOutputMerge(t *testing.T) {
	st := exectest.NewStore()
	env := &Env{Ctx: context.Background(), DB: "d", Output: &StoreOutput{Store: st}}
	_, err := run(t, env, docs(t, `{"_id":1,"a":1}`, `{"_id":2,"a":2}`), parse(t, `{"$merge":"t"}`))
	mustNoErr(t, err)
	_, err = run(t, env, docs(t, `{"_id":2,"b":3}`, `{"_id":3}`), parse(t, `{"$merge":"t"}`))
	mustNoErr(t, err)
	if got := st.Docs("d", "t"); len(got) != 3 || len(got[1]) != 3 {
		t.Fatalf("after $merge: %v", got)
	}
	_, err = run(t, env, docs(t, `{"_id":4,"k":1}`), parse(t, `{"$merge":{"into":"t","on":"k"}}`))
	if !hasCode(err, mongoerr.Location51183) {
		t.Fatalf("$merge on a field without a unique index: %v", err)
	}
	refused := mongoerr.New(mongoerr.Unauthorized, "no")
	env.Output = &StoreOutput{Store: st, Check: func(stage, db, coll string) error {
		if stage != "$merge" || db != "d" || coll != "t" {
			t.Errorf("Check(%s, %s, %s)", stage, db, coll)
		}
		return refused
	}}
	if _, err = run(t, env, docs(t, `{"_id":5}`), parse(t, `{"$merge":"t"}`)); err != refused || len(st.Docs("d", "t")) != 3 {
		t.Fatalf("a refused target: %v", err)
	}
}
