package exec

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// run pushes docs through the pipeline and returns its output as
// extended JSON lines, for compact comparison.
func run(t *testing.T, env *Env, docs []bson.D, pipeline ...bson.D) ([]string, error) {
	t.Helper()
	sink := &docsSink{what: "test"}
	head, err := Build(pipeline, sink, env)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if err := head.Push(d); err == ErrDone {
			break
		} else if err != nil {
			return nil, err
		}
	}
	if err := head.Finish(); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range sink.docs {
		b, err := bson.MarshalExtJSON(d, false, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out, nil
}

func parse(t *testing.T, js string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(js), false, &d); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return d
}

func docs(t *testing.T, js ...string) []bson.D {
	var out []bson.D
	for _, s := range js {
		out = append(out, parse(t, s))
	}
	return out
}

func TestStages(t *testing.T) {
	input := docs(t,
		`{"_id":1,"k":"a","n":2,"arr":[1,2],"sub":{"x":1,"y":2}}`,
		`{"_id":2,"k":"b","n":5,"arr":[],"sub":{"x":3}}`,
		`{"_id":3,"k":"a","n":7,"arr":null}`,
		`{"_id":4,"k":"c","n":1,"arr":9}`,
	)
	cases := []struct {
		name     string
		pipeline []string
		want     []string
	}{
		{"project inclusion with computed and nested",
			[]string{`{"$project":{"sub.x":1,"twice":{"$multiply":["$n",2]}}}`, `{"$limit":2}`},
			[]string{`{"_id":1,"sub":{"x":1},"twice":4}`, `{"_id":2,"sub":{"x":3},"twice":10}`}},
		{"project exclusion",
			[]string{`{"$project":{"arr":0,"sub.y":0,"_id":0}}`, `{"$limit":1}`},
			[]string{`{"k":"a","n":2,"sub":{"x":1}}`}},
		{"project computed subfield on a scalar",
			[]string{`{"$match":{"_id":4}}`, `{"$project":{"_id":0,"arr.v":{"$literal":1}}}`},
			[]string{`{"arr":{"v":1}}`}},
		{"addFields through arrays",
			[]string{`{"$match":{"_id":1}}`, `{"$project":{"_id":0,"arr":1}}`, `{"$addFields":{"arr.t":true}}`},
			[]string{`{"arr":[{"t":true},{"t":true}]}`}},
		{"unset nested",
			[]string{`{"$match":{"_id":1}}`, `{"$unset":["sub.y","arr","k","n"]}`},
			[]string{`{"_id":1,"sub":{"x":1}}`}},
		{"unwind with index and preserve",
			[]string{`{"$unwind":{"path":"$arr","includeArrayIndex":"i","preserveNullAndEmptyArrays":true}}`, `{"$project":{"arr":1,"i":1}}`},
			[]string{`{"_id":1,"arr":1,"i":0}`, `{"_id":1,"arr":2,"i":1}`, `{"_id":2,"i":null}`, `{"_id":3,"arr":null,"i":null}`, `{"_id":4,"arr":9,"i":null}`}},
		{"unwind drops empty, null and missing",
			[]string{`{"$unwind":"$arr"}`, `{"$project":{"arr":1}}`},
			[]string{`{"_id":1,"arr":1}`, `{"_id":1,"arr":2}`, `{"_id":4,"arr":9}`}},
		{"group with expression id",
			[]string{`{"$group":{"_id":{"$gt":["$n",3]},"ids":{"$push":"$_id"},"s":{"$sum":"$n"}}}`},
			[]string{`{"_id":false,"ids":[1,4],"s":3}`, `{"_id":true,"ids":[2,3],"s":12}`}},
		{"sortByCount",
			[]string{`{"$sortByCount":"$k"}`, `{"$limit":1}`},
			[]string{`{"_id":"a","count":2}`}},
		{"bucket with default",
			[]string{`{"$bucket":{"groupBy":"$n","boundaries":[0,3,6],"default":99,"output":{"ids":{"$push":"$_id"}}}}`},
			[]string{`{"_id":0,"ids":[1,4]}`, `{"_id":3,"ids":[2]}`, `{"_id":99,"ids":[3]}`}},
		{"facet",
			[]string{`{"$facet":{"n":[{"$count":"c"}],"top":[{"$sort":{"n":-1}},{"$limit":1},{"$project":{"_id":1}}]}}`},
			[]string{`{"n":[{"c":4}],"top":[{"_id":3}]}`}},
		{"replaceRoot",
			[]string{`{"$match":{"_id":2}}`, `{"$replaceRoot":{"newRoot":"$sub"}}`},
			[]string{`{"x":3}`}},
		{"match with $expr",
			[]string{`{"$match":{"$expr":{"$eq":["$k","a"]}}}`, `{"$project":{"_id":1}}`},
			[]string{`{"_id":1}`, `{"_id":3}`}},
	}
	for _, c := range cases {
		var pipeline []bson.D
		for _, s := range c.pipeline {
			pipeline = append(pipeline, parse(t, s))
		}
		got, err := run(t, &Env{}, input, pipeline...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
		}
	}
}

func TestStageErrors(t *testing.T) {
	cases := []struct {
		stage string
		code  mongoerr.Code
	}{
		{`{"$frob":{}}`, mongoerr.Location40324},
		{`{"$out":"x"}`, mongoerr.NotImplemented},
		{`{"$project":{"a":1,"b":0}}`, mongoerr.Location31254},
		{`{"$project":{"a":0,"b":1}}`, mongoerr.Location31253},
		{`{"$project":{"a":0,"b":"$x"}}`, mongoerr.Location31252},
		{`{"$project":{"a":1,"a.b":1}}`, mongoerr.Location31250},
		{`{"$addFields":{}}`, mongoerr.Location40177},
		{`{"$unset":5}`, mongoerr.Location31002},
		{`{"$unwind":{"path":"$a","bogus":1}}`, mongoerr.Location28811},
		{`{"$unwind":{"path":"$a","includeArrayIndex":"$i"}}`, mongoerr.Location28822},
		{`{"$group":{"n":{"$sum":1}}}`, mongoerr.Location15955},
		{`{"$group":{"_id":null,"a.b":{"$sum":1}}}`, mongoerr.Location40235},
		{`{"$group":{"_id":null,"n":{"$frob":1}}}`, mongoerr.Location15952},
		{`{"$group":{"_id":null,"n":{"$accumulator":{}}}}`, mongoerr.NotImplemented},
		{`{"$bucket":{"groupBy":"$n","boundaries":[1]}}`, mongoerr.Location40192},
		{`{"$bucket":{"groupBy":"$n","boundaries":[1,"a"]}}`, mongoerr.Location40193},
		{`{"$bucket":{"groupBy":"$n","boundaries":[0,5],"default":3}}`, mongoerr.Location40199},
		{`{"$facet":{"a":[{"$out":"x"}]}}`, mongoerr.Location40600},
		{`{"$facet":{"a":5}}`, mongoerr.Location40170},
		{`{"$sample":{}}`, mongoerr.Location28749},
		{`{"$sortByCount":"k"}`, mongoerr.Location40148},
		{`{"$replaceRoot":{}}`, mongoerr.Location40231},
		{`{"$lookup":{"from":"x","localField":"a","as":"o"}}`, mongoerr.FailedToParse},
		{`{"$skip":"a"}`, mongoerr.Location15972},
		{`{"$skip":-1}`, mongoerr.Location5107200},
		{`{"$skip":1.5}`, mongoerr.Location5107200},
		{`{"$limit":"a"}`, mongoerr.Location15957},
		{`{"$limit":-1}`, mongoerr.Location5107201},
		{`{"$limit":0}`, mongoerr.Location15958},
		{`{"$count":1}`, mongoerr.Location40156},
		{`{"$count":""}`, mongoerr.Location40157},
		{`{"$count":"$n"}`, mongoerr.Location40158},
		{`{"$count":"a.b"}`, mongoerr.Location40160},
		{`{"$sort":1}`, mongoerr.Location15973},
		{`{"$sort":{}}`, mongoerr.Location15976},
		{`{"$sort":{"a":"x"}}`, mongoerr.Location15974},
		{`{"$sort":{"a":2}}`, mongoerr.Location15975},
		{`{"$sort":{"a":{"$meta":"textScore"}}}`, mongoerr.Location40218},
		{`{"$sort":{"a":{"$meta":"searchScore"}}}`, mongoerr.NotImplemented},
		{`{"$sort":{"a":{"x":1}}}`, mongoerr.Location15974},
	}
	for _, c := range cases {
		_, err := Build([]bson.D{parse(t, c.stage)}, &docsSink{}, &Env{Read: func(context.Context, string, *query.Filter, func(bson.D) error) error { return nil }})
		e, ok := mongoerr.As(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: got %v, want code %d", c.stage, err, c.code)
		}
	}
}

// $lookup reads the other collection through Env.Read, with the filter
// its equality form builds (once per batch of documents) and the let
// variables its pipeline reads (once per document).
func TestLookupThroughReader(t *testing.T) {
	foreign := docs(t, `{"_id":10,"ref":1,"v":"x"}`, `{"_id":11,"ref":2,"v":"y"}`, `{"_id":12,"v":"no ref"}`)
	var reads []string
	env := &Env{Read: func(_ context.Context, coll string, f *query.Filter, fn func(bson.D) error) error {
		reads = append(reads, coll)
		for _, d := range foreign {
			ok, err := f.MatchErr(d)
			if err != nil {
				return err
			}
			if ok {
				if err := fn(d); err != nil {
					return err
				}
			}
		}
		return nil
	}}
	input := docs(t, `{"_id":1,"r":[1,2]}`, `{"_id":2}`)
	got, err := run(t, env, input,
		parse(t, `{"$lookup":{"from":"f","localField":"r","foreignField":"ref","as":"m"}}`),
		parse(t, `{"$project":{"m._id":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"_id":1,"m":[{"_id":10},{"_id":11}]}`, `{"_id":2,"m":[{"_id":12}]}`}
	// The equality form reads the other collection once for a batch.
	if strings.Join(got, " ") != strings.Join(want, " ") || len(reads) != 1 || reads[0] != "f" {
		t.Fatalf("got %v (reads %v), want %v", got, reads, want)
	}
	got, err = run(t, env, input[:1],
		parse(t, `{"$lookup":{"from":"f","let":{"first":{"$first":"$r"}},"as":"m","pipeline":[{"$match":{"$expr":{"$eq":["$ref","$$first"]}}},{"$project":{"_id":0,"v":1}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"_id":1,"r":[1,2],"m":[{"v":"x"}]}`; len(got) != 1 || got[0] != want {
		t.Fatalf("pipeline form: got %v, want %s", got, want)
	}
}

func TestUnionWith(t *testing.T) {
	other := docs(t, `{"_id":"x","n":1}`, `{"_id":"y","n":2}`)
	env := &Env{Read: func(_ context.Context, coll string, f *query.Filter, fn func(bson.D) error) error {
		for _, d := range other {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}}
	got, err := run(t, env, docs(t, `{"_id":1}`),
		parse(t, `{"$unionWith":{"coll":"o","pipeline":[{"$match":{"n":{"$gt":1}}},{"$set":{"from":"o"}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"_id":1}`, `{"_id":"y","n":2,"from":"o"}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
	got, err = run(t, env, docs(t, `{"_id":1}`), parse(t, `{"$unionWith":"o"}`), parse(t, `{"$limit":2}`))
	if err != nil || len(got) != 2 {
		t.Fatalf("with a limit after it: %v %v", got, err)
	}
}

// $sample holds at most size documents and returns distinct ones.
func TestSampleHoldsOnlyItsSize(t *testing.T) {
	sink := &docsSink{}
	head, err := Build([]bson.D{parse(t, `{"$sample":{"size":3}}`)}, sink, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := head.Push(bson.D{{Key: "_id", Value: int32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if s := head.(*sampleStage); len(s.docs) != 3 {
		t.Fatalf("holds %d documents", len(s.docs))
	}
	if err := head.Finish(); err != nil {
		t.Fatal(err)
	}
	seen := map[any]bool{}
	for _, d := range sink.docs {
		seen[d[0].Value] = true
	}
	if len(sink.docs) != 3 || len(seen) != 3 {
		t.Fatalf("sampled %v", sink.docs)
	}
}

// Blocking stages fail with MongoDB's code past the memory limit.
func TestGroupPushMemoryLimit(t *testing.T) {
	head, err := Build([]bson.D{parse(t, `{"$group":{"_id":null,"all":{"$push":"$pad"}}}`)}, &docsSink{}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1<<20)
	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		failed = head.Push(bson.D{{Key: "pad", Value: pad}})
	}
	if e, ok := mongoerr.As(failed); !ok || e.Code != mongoerr.QueryExceededMemoryLimit {
		t.Fatalf("pushing 200 MB: %v", failed)
	}
}
