package exec

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// testCol is a collection with the _id index and the indexes given.
func testCol(indexes ...storage.Index) *storage.Collection {
	return &storage.Collection{DB: "db", Name: "c", Indexes: append([]storage.Index{ix("_id_", "_id", "_id")}, indexes...)}
}

func spec(t *testing.T, filter, sortDoc, proj bson.D, skip, limit int64) *ReadSpec {
	t.Helper()
	rs, err := ParseReadSpec(filter, sortDoc, proj, skip, limit)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// drain reads src to the end in batches of n and returns the documents.
func drain(t *testing.T, src Source, n int) []bson.D {
	t.Helper()
	var out []bson.D
	for range 100000 {
		batch, done, err := src.Next(context.Background(), storage.On{}, n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && len(batch) > n {
			t.Fatalf("a batch of %d documents, asked for %d", len(batch), n)
		}
		for _, raw := range batch {
			d, err := bsonx.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
		if done {
			return out
		}
	}
	t.Fatal("the source never ends")
	return nil
}

func open(t *testing.T, st Store, col *storage.Collection, rs *ReadSpec) Source {
	t.Helper()
	src, err := (&Read{Store: st, Col: col, Spec: rs}).Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// reference is what a read must return, computed the plain way: every
// document the filter matches, in _id order, stably sorted, skipped,
// limited, projected.
func reference(t *testing.T, docs []bson.D, rs *ReadSpec) []bson.D {
	t.Helper()
	var out []bson.D
	for _, d := range docs {
		if rs.Filter.Match(d) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b bson.D) int {
		ia, _ := lookupField(a, "_id")
		ib, _ := lookupField(b, "_id")
		return query.Compare(ia, ib)
	})
	if !rs.Sort.IsEmpty() {
		slices.SortStableFunc(out, rs.Sort.Compare)
	}
	out = out[min(int(rs.Skip), len(out)):]
	if rs.Limit > 0 && len(out) > int(rs.Limit) {
		out = out[:rs.Limit]
	}
	if rs.Proj != nil {
		for i, d := range out {
			p, err := rs.Proj.Apply(d)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = p
		}
	}
	return out
}

func ids(docs []bson.D) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i], _ = lookupField(d, "_id")
	}
	return out
}

// sameDocs compares documents after a BSON round trip (int32 stays int32).
func sameDocs(t *testing.T, got, want []bson.D) {
	t.Helper()
	norm := func(ds []bson.D) []bson.D {
		out := make([]bson.D, len(ds))
		for i, d := range ds {
			raw, err := bsonx.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if out[i], err = bsonx.Decode(raw); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("got %d documents %v\nwant %d %v", len(g), ids(g), len(w), ids(w))
	}
}

func numbered(n int, f func(i int) bson.D) []bson.D {
	docs := make([]bson.D, n)
	for i := range docs {
		docs[i] = f(i)
	}
	return docs
}

func TestScanPagesByKeysetAcrossBatches(t *testing.T) {
	// Inserted out of _id order: the scan still returns _id order.
	docs := numbered(3000, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int32((i * 7919) % 3000)}, {Key: "a", Value: int32(i % 7)}}
	})
	for _, c := range []struct {
		name   string
		filter bson.D
		batch  int
	}{
		{"all, small batches", nil, 10},
		{"all, whole batches", nil, 0},
		{"filtered, small batches", bson.D{{Key: "a", Value: int32(3)}}, 7},
		{"filtered, whole batches", bson.D{{Key: "a", Value: int32(3)}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newFakeStore(t, docs...)
			rs := spec(t, c.filter, nil, nil, 0, 0)
			got := drain(t, open(t, st, testCol(), rs), c.batch)
			sameDocs(t, got, reference(t, docs, rs))
			if c.batch > 0 && len(st.calls) < 2 {
				t.Fatalf("%d chunks: the scan did not page", len(st.calls))
			}
			// Each chunk starts after the last row of the one before.
			for i := 1; i < len(st.calls); i++ {
				if st.calls[i].After == nil {
					t.Fatalf("chunk %d restarts the scan", i)
				}
			}
			if st.read != len(docs) {
				t.Fatalf("read %d rows of %d: rows read twice or missed", st.read, len(docs))
			}
		})
	}
}

func TestScanContinuesAfterACutChunk(t *testing.T) {
	docs := numbered(50, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 2)}} })
	st := newFakeStore(t, docs...)
	st.CutAfter = 3 // every chunk stops early, as past storage's byte bound
	rs := spec(t, bson.D{{Key: "a", Value: int32(1)}}, nil, nil, 0, 0)
	sameDocs(t, drain(t, open(t, st, testCol(), rs), 0), reference(t, docs, rs))
}

func TestScanRechecksWhatThePrefilterLetsThrough(t *testing.T) {
	// The fake's prefilter lets every row through: the read must drop
	// what the filter does not match, whether it decides on the BSON
	// bytes or on the decoded document ($expr, arrays, regexes).
	docs := numbered(200, func(i int) bson.D {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 10)}, {Key: "b", Value: int32(i % 3)}, {Key: "s", Value: fmt.Sprintf("n%03d", i)}}
		if i%5 == 0 {
			d = append(d, bson.E{Key: "tags", Value: bson.A{"x", int32(i % 4)}})
		}
		return d
	})
	for _, filter := range []bson.D{
		{{Key: "a", Value: bson.D{{Key: "$gte", Value: int32(7)}}}},
		{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$a", "$b"}}}}},
		{{Key: "tags", Value: int32(2)}},
		{{Key: "s", Value: bson.D{{Key: "$regex", Value: "1.$"}}}},
		{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "b", Value: int32(2)}}}}},
	} {
		t.Run(fmt.Sprint(filter), func(t *testing.T) {
			st := newFakeStore(t, docs...)
			rs := spec(t, filter, nil, nil, 0, 0)
			want := reference(t, docs, rs)
			if len(want) == len(docs) {
				t.Fatal("the filter selects everything: nothing to recheck")
			}
			sameDocs(t, drain(t, open(t, st, testCol(), rs), 9), want)
		})
	}
}

func TestScanTrustsAnExactPrefilter(t *testing.T) {
	// {_id: scalar} is exact: storage selects just the matches and the
	// read takes them without a recheck, decoding nothing.
	docs := numbered(50, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}} })
	for _, id := range []int32{42, 1000} {
		rs := spec(t, bson.D{{Key: "_id", Value: id}}, nil, nil, 0, 0)
		if !rs.Exact {
			t.Fatal("{_id: scalar} is not exact")
		}
		st := newFakeStore(t, docs...)
		st.Where = rs.Filter.Match
		sameDocs(t, drain(t, open(t, st, testCol(), rs), 0), reference(t, docs, rs))
	}
	for _, filter := range []bson.D{{{Key: "_id", Value: nil}}, {{Key: "_id", Value: bson.D{{Key: "$gt", Value: int32(1)}}}}, {{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}}} {
		if spec(t, filter, nil, nil, 0, 0).Exact {
			t.Fatalf("%v taken as exact", filter)
		}
	}
}

func TestScanSkipLimitProjection(t *testing.T) {
	docs := numbered(500, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 4)}, {Key: "b", Value: "x"}}
	})
	proj := bson.D{{Key: "a", Value: int32(1)}}
	for _, c := range []struct {
		filter      bson.D
		skip, limit int64
		proj        bson.D
	}{
		{nil, 0, 5, nil},
		{nil, 10, 5, proj},
		{nil, 498, 5, nil},
		{bson.D{{Key: "a", Value: int32(2)}}, 3, 4, proj},
		{bson.D{{Key: "a", Value: int32(2)}}, 200, 0, nil},
		{bson.D{{Key: "a", Value: int32(2)}}, 0, 1000, nil},
	} {
		t.Run(fmt.Sprint(c.filter, c.skip, c.limit, c.proj), func(t *testing.T) {
			st := newFakeStore(t, docs...)
			rs := spec(t, c.filter, nil, c.proj, c.skip, c.limit)
			sameDocs(t, drain(t, open(t, st, testCol(), rs), 3), reference(t, docs, rs))
		})
	}
	// An empty filter with a limit reads no more rows than it returns,
	// plus one that says the scan ends.
	st := newFakeStore(t, docs...)
	drain(t, open(t, st, testCol(), spec(t, nil, nil, nil, 0, 5)), 0)
	if st.read > 6 {
		t.Fatalf("a limit of 5 read %d rows", st.read)
	}
}

func TestScanBatchStaysUnderTheReplyLimit(t *testing.T) {
	big := string(make([]byte, 1<<20))
	docs := numbered(40, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "s", Value: big}} })
	src := open(t, newFakeStore(t, docs...), testCol(), spec(t, nil, nil, nil, 0, 0))
	total := 0
	for {
		batch, done, err := src.Next(context.Background(), storage.On{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for i, raw := range batch {
			size += ElemSize(i, raw)
		}
		if size > MaxBatchBytes || len(batch) == 0 && !done {
			t.Fatalf("a batch of %d documents, %d bytes", len(batch), size)
		}
		total += len(batch)
		if done {
			break
		}
	}
	if total != len(docs) {
		t.Fatalf("%d documents of %d", total, len(docs))
	}
}

func TestScanByIDAndNaturalOrder(t *testing.T) {
	docs := numbered(100, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(99 - i)}, {Key: "a", Value: int32(i)}} })
	rs := spec(t, nil, bson.D{{Key: "_id", Value: int32(-1)}}, nil, 2, 10)
	st := newFakeStore(t, docs...)
	sameDocs(t, drain(t, open(t, st, testCol(), rs), 4), reference(t, docs, rs))
	for _, p := range st.calls {
		if !p.Desc || p.Order != nil {
			t.Fatalf("a sort by _id descending scanned with %+v", p)
		}
	}

	// {$natural: -1} on a capped collection: newest first.
	capped := testCol()
	capped.Capped = &storage.Capped{Size: 4096}
	rs = spec(t, nil, nil, nil, 0, 0)
	rs.NaturalDesc = true
	got := drain(t, open(t, newFakeStore(t, docs...), capped, rs), 7)
	want := slices.Clone(docs)
	slices.Reverse(want)
	sameDocs(t, got, want)
}

func TestSortInMemory(t *testing.T) {
	docs := numbered(3000, func(i int) bson.D {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32((i * 37) % 101)}}
		switch i % 9 {
		case 0: // missing b
		case 1:
			d = append(d, bson.E{Key: "b", Value: bson.A{int32(i % 5), int32(50 - i%7)}})
		case 2:
			d = append(d, bson.E{Key: "b", Value: "text"})
		default:
			d = append(d, bson.E{Key: "b", Value: float64(i%13) / 2})
		}
		return d
	})
	for _, c := range []struct {
		filter, sort bson.D
		skip, limit  int64
		proj         bson.D
	}{
		{nil, bson.D{{Key: "a", Value: int32(1)}}, 0, 0, nil},
		{nil, bson.D{{Key: "b", Value: int32(-1)}, {Key: "a", Value: int32(1)}}, 0, 0, nil},
		{nil, bson.D{{Key: "b", Value: int32(1)}}, 17, 9, bson.D{{Key: "b", Value: int32(1)}}},
		// a top-k much smaller than the input, pruned many times
		{nil, bson.D{{Key: "a", Value: int32(-1)}}, 5, 3, nil},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: int32(20)}}}}, bson.D{{Key: "b", Value: int32(1)}}, 0, 0, nil},
	} {
		t.Run(fmt.Sprint(c.sort, c.skip, c.limit), func(t *testing.T) {
			rs := spec(t, c.filter, c.sort, c.proj, c.skip, c.limit)
			sameDocs(t, drain(t, open(t, newFakeStore(t, docs...), testCol(), rs), 50), reference(t, docs, rs))
		})
	}
}

func TestSortInMemoryMemoryLimit(t *testing.T) {
	old := findSortBytes
	findSortBytes = 1 << 20
	defer func() { findSortBytes = old }()
	pad := string(make([]byte, 400))
	docs := numbered(4000, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 13)}, {Key: "pad", Value: pad}}
	})
	sortA := bson.D{{Key: "a", Value: int32(1)}}
	_, err := (&Read{Store: newFakeStore(t, docs...), Col: testCol(), Spec: spec(t, nil, sortA, nil, 0, 0)}).Open(context.Background())
	if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.QueryExceededMemoryLimit {
		t.Fatalf("sorting %d documents of 400 bytes within 1 MiB: %v", len(docs), err)
	}
	// With a limit only the top documents are held: within the limit.
	rs := spec(t, nil, sortA, nil, 3, 10)
	sameDocs(t, drain(t, open(t, newFakeStore(t, docs...), testCol(), rs), 0), reference(t, docs, rs))
}

// multikeyDocs have a on some documents as an array (multikey on an
// index of a: NULL key column), missing on others.
func multikeyDocs() []bson.D {
	return numbered(400, func(i int) bson.D {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "g", Value: int32(i % 3)}}
		switch i % 10 {
		case 0:
			d = append(d, bson.E{Key: "a", Value: bson.A{int32(500 - i), int32(i % 17), int32(i)}})
		case 1: // no a: sorts as null, first
		default:
			d = append(d, bson.E{Key: "a", Value: int32((i * 31) % 97)})
		}
		return d
	})
}

func TestIndexWalkServesSortAsTheInMemorySortWould(t *testing.T) {
	docs := multikeyDocs()
	col := testCol(ix("a_1", "k1", "a"), ix("g_1_a_1", "k2", "g", "a"))
	for _, c := range []struct {
		filter, sort bson.D
		skip, limit  int64
		index        string
	}{
		{nil, bson.D{{Key: "a", Value: int32(1)}}, 0, 0, "k1"},
		{nil, bson.D{{Key: "a", Value: int32(-1)}}, 0, 0, "k1"},
		{nil, bson.D{{Key: "a", Value: int32(1)}}, 0, 5, "k1"},
		{nil, bson.D{{Key: "a", Value: int32(-1)}}, 7, 5, "k1"},
		{bson.D{{Key: "g", Value: int32(2)}}, bson.D{{Key: "a", Value: int32(-1)}}, 0, 20, "k2"},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: int32(40)}}}}, bson.D{{Key: "a", Value: int32(1)}}, 0, 0, "k1"},
	} {
		t.Run(fmt.Sprint(c.filter, c.sort, c.skip, c.limit), func(t *testing.T) {
			st := newFakeStore(t, docs...)
			rs := spec(t, c.filter, c.sort, nil, c.skip, c.limit)
			got := drain(t, open(t, st, col, rs), 6)
			sameDocs(t, got, reference(t, docs, rs))
			// Every document at most once, though multikey ones come
			// from their own read.
			seen := map[any]bool{}
			for _, id := range ids(got) {
				if seen[id] {
					t.Fatalf("_id %v twice", id)
				}
				seen[id] = true
			}
			walked := false
			for _, p := range st.calls {
				if p.Order == nil || p.Order.Column != c.index {
					t.Fatalf("read with %+v, want a walk of %s", p, c.index)
				}
				walked = walked || !p.Order.Null
			}
			if !walked {
				t.Fatal("the index was never walked")
			}
		})
	}
}

func TestIndexWalkWithLimitReadsLittle(t *testing.T) {
	docs := numbered(5000, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(5000 - i)}} })
	st := newFakeStore(t, docs...)
	rs := spec(t, nil, bson.D{{Key: "a", Value: int32(1)}}, nil, 0, 10)
	got := drain(t, open(t, st, testCol(ix("a_1", "k1", "a")), rs), 0)
	sameDocs(t, got, reference(t, docs, rs))
	if st.read > 11 {
		t.Fatalf("a walk with limit 10 read %d rows", st.read)
	}
}

func TestIndexWalkMultikeyDocumentOnce(t *testing.T) {
	// {a: [5, 1, 9]} sorts by 1 ascending and by 9 descending, once.
	docs := []bson.D{
		{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(3)}},
		{{Key: "_id", Value: int32(2)}, {Key: "a", Value: bson.A{int32(5), int32(1), int32(9)}}},
		{{Key: "_id", Value: int32(3)}, {Key: "a", Value: int32(7)}},
		{{Key: "_id", Value: int32(4)}, {Key: "a", Value: int32(10)}},
	}
	col := testCol(ix("a_1", "k1", "a"))
	for _, c := range []struct {
		dir  int32
		want []any
	}{
		{1, []any{int32(2), int32(1), int32(3), int32(4)}},
		{-1, []any{int32(4), int32(2), int32(3), int32(1)}},
	} {
		got := drain(t, open(t, newFakeStore(t, docs...), col, spec(t, nil, bson.D{{Key: "a", Value: c.dir}}, nil, 0, 0)), 1)
		if !reflect.DeepEqual(ids(got), c.want) {
			t.Fatalf("sort {a: %d}: %v, want %v", c.dir, ids(got), c.want)
		}
	}
}

func TestReadKeepsItsNodeOnEveryBatch(t *testing.T) {
	docs := numbered(100, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i)}} })
	node := &storage.Node{Name: "standby1"}
	for _, sortDoc := range []bson.D{nil, {{Key: "a", Value: int32(1)}}} {
		st := newFakeStore(t, docs...)
		// The request's On names no node on the later batches (a getMore
		// routed elsewhere): the read stays on its first node.
		r := &Read{Store: st, On: storage.On{Node: node}, Col: testCol(ix("a_1", "k1", "a")), Spec: spec(t, nil, sortDoc, nil, 0, 0)}
		src, err := r.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Each batch runs at the tier of the call that asks for it (the
		// getMore's), on the read's node.
		for done := false; !done; {
			if _, done, err = src.Next(context.Background(), storage.At(qos.Low), 3); err != nil {
				t.Fatal(err)
			}
		}
		if len(st.on) < 2 {
			t.Fatalf("%d calls", len(st.on))
		}
		for i, on := range st.on {
			if on.Node != node || on.Tier() != qos.Low {
				t.Fatalf("call %d ran on %v at tier %v", i, on.Node, on.Tier())
			}
		}
	}
}

func TestCountEachWalk(t *testing.T) {
	docs := multikeyDocs()
	ctx := context.Background()
	col := testCol(ix("a_1", "k1", "a"))

	n, err := (&Read{Store: newFakeStore(t, docs...), Col: col, Spec: spec(t, nil, nil, nil, 10, 0)}).Count(ctx)
	if err != nil || n != 390 {
		t.Fatalf("count skip 10 of 400: %d, %v", n, err)
	}
	g1 := bson.D{{Key: "g", Value: int32(1)}}
	rs := spec(t, g1, nil, nil, 0, 50)
	n, err = (&Read{Store: newFakeStore(t, docs...), Col: col, Spec: rs}).Count(ctx)
	if want := int64(len(reference(t, docs, rs))); err != nil || n != want {
		t.Fatalf("count {g: 1} limit 50: %d, %v, want %d", n, err, want)
	}

	// Each: decoded documents in _id order until told to stop.
	var each []bson.D
	err = (&Read{Store: newFakeStore(t, docs...), Col: col, Spec: spec(t, g1, nil, nil, 0, 0)}).Each(ctx, func(doc bson.D, raw bson.Raw) (bool, error) {
		if d, _ := bsonx.Decode(raw); !reflect.DeepEqual(d, doc) {
			t.Fatalf("raw %v and decoded %v differ", d, doc)
		}
		each = append(each, doc)
		return len(each) == 20, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sameDocs(t, each, reference(t, docs, spec(t, g1, nil, nil, 0, 20)))

	// Walk: a pipeline's input in the sort's order, from the index.
	rs = spec(t, g1, bson.D{{Key: "a", Value: int32(-1)}}, nil, 0, 0)
	r := &Read{Store: newFakeStore(t, docs...), Col: col, Spec: rs}
	plan, ok := r.IndexSort()
	if !ok {
		t.Fatal("no index serves {a: -1}")
	}
	var walked []bson.D
	if err := r.Walk(ctx, plan, 0, func(d bson.D) error { walked = append(walked, d); return nil }); err != nil {
		t.Fatal(err)
	}
	sameDocs(t, walked, reference(t, docs, rs))
}

func TestExplainAndPlanSummary(t *testing.T) {
	ctx := context.Background()
	col := testCol(ix("a_1", "k1", "a"))
	var notes []string
	read := func(filter, sortDoc bson.D) *Read {
		return &Read{Store: newFakeStore(t), Col: col, Spec: spec(t, filter, sortDoc, nil, 0, 0), Note: func(s string) { notes = append(notes, s) }}
	}
	input := func(w bson.D) bson.D {
		v, _ := lookupField(w, "inputStage")
		d, _ := v.(bson.D)
		return d
	}
	w, err := read(nil, bson.D{{Key: "a", Value: int32(-1)}}).Explain(ctx, bson.D{{Key: "a", Value: int32(-1)}})
	if err != nil {
		t.Fatal(err)
	}
	if plan, _ := lookupField(w, "plan"); plan != "fake plan" {
		t.Fatalf("plan %v", plan)
	}
	if in := input(w); in == nil || in[1].Value != "a_1" || in[3].Value != "backward" {
		t.Fatalf("sort {a: -1} by the index: %v", in)
	}
	w, _ = read(nil, bson.D{{Key: "b", Value: int32(1)}}).Explain(ctx, bson.D{{Key: "b", Value: int32(1)}})
	if in := input(w); in == nil || in[0].Value != "SORT" {
		t.Fatalf("sort {b: 1} in memory: %v", in)
	}
	w, _ = read(nil, bson.D{{Key: "_id", Value: int32(-1)}}).Explain(ctx, nil)
	if in := input(w); in == nil || in[1].Value != "_id_" || in[3].Value != "backward" {
		t.Fatalf("sort {_id: -1}: %v", in)
	}
	if w, _ = read(nil, nil).Explain(ctx, nil); input(w) != nil {
		t.Fatalf("no sort: %v", w)
	}
	if len(notes) != 0 {
		t.Fatalf("explain noted a plan: %v", notes)
	}

	for _, c := range []struct {
		filter, sort bson.D
		want         string
	}{
		{nil, nil, "COLLSCAN"},
		{bson.D{{Key: "_id", Value: int32(3)}}, nil, "IDHACK"},
		{nil, bson.D{{Key: "a", Value: int32(1)}}, "IXSCAN {a} (sort)"},
		{nil, bson.D{{Key: "b", Value: int32(1)}}, "COLLSCAN, SORT"},
	} {
		notes = nil
		if _, err := read(c.filter, c.sort).Open(ctx); err != nil {
			t.Fatal(err)
		}
		if len(notes) != 1 || notes[0] != c.want {
			t.Fatalf("filter %v sort %v noted %v, want %q", c.filter, c.sort, notes, c.want)
		}
	}
	standby := &storage.Node{Name: "s1"}
	if got := PlanSummary(col, spec(t, nil, nil, nil, 0, 0), storage.ScanParams{}, false, storage.On{Node: standby}); got != "COLLSCAN, on s1" {
		t.Fatalf("on a standby: %q", got)
	}
}

func TestFeedPicksHowAPipelineReads(t *testing.T) {
	docs := multikeyDocs()
	ctx := context.Background()
	col := testCol(ix("a_1", "k1", "a"))
	g1 := bson.D{{Key: "g", Value: int32(1)}}
	feed := func(st *fakeStore, stages []bson.D) ([]bson.D, []bson.D) {
		t.Helper()
		rs := spec(t, g1, nil, nil, 0, 0)
		var hint int64
		rs.Sort, hint = LeadingSort(stages)
		rest, run := (&Read{Store: st, Col: col, Spec: rs}).Feed(stages, hint)
		var got []bson.D
		err := run(ctx, func(d bson.D) error {
			got = append(got, d)
			if len(got) == 1000 {
				return ErrDone
			}
			return nil
		})
		if err != nil && err != ErrDone {
			t.Fatal(err)
		}
		return rest, got
	}
	want := reference(t, docs, spec(t, g1, nil, nil, 0, 0))

	// Counting stages get one empty document per match.
	count := []bson.D{{{Key: "$count", Value: "n"}}}
	rest, got := feed(newFakeStore(t, docs...), count)
	if len(rest) != 1 || len(got) != len(want) || len(got[0]) != 0 {
		t.Fatalf("counting: %d stages, %d documents (%v), want 1 and %d empty", len(rest), len(got), got[:min(1, len(got))], len(want))
	}

	// A $sort an index serves is dropped: the walk brings the order.
	sortA := []bson.D{{{Key: "$sort", Value: bson.D{{Key: "a", Value: int32(-1)}}}}, {{Key: "$limit", Value: int32(5)}}}
	st := newFakeStore(t, docs...)
	rest, got = feed(st, sortA)
	if len(rest) != 1 || rest[0][0].Key != "$limit" {
		t.Fatalf("walked: stages left %v", rest)
	}
	// The walk holds only the multikey documents the $limit can reach:
	// the first 5 are right, what follows is for the $limit to drop.
	sameDocs(t, got[:5], reference(t, docs, spec(t, g1, bson.D{{Key: "a", Value: int32(-1)}}, nil, 0, 5)))
	if st.calls[len(st.calls)-1].Order == nil {
		t.Fatal("the $sort was dropped but the index not walked")
	}

	// Otherwise every match in _id order, every stage left to run.
	sortB := []bson.D{{{Key: "$sort", Value: bson.D{{Key: "b", Value: int32(1)}}}}}
	rest, got = feed(newFakeStore(t, docs...), sortB)
	if len(rest) != 1 {
		t.Fatalf("unserved $sort: stages left %v", rest)
	}
	sameDocs(t, got, want)
}
