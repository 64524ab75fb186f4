package exec

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// memReader reads in-memory collections.
func memReader(colls map[string][]bson.D, reads *int) Reader {
	return func(_ context.Context, coll string, f *query.Filter, fn func(bson.D) error) error {
		*reads++
		for _, d := range colls[coll] {
			if f.Match(d) {
				if err := fn(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func TestGraphLookup(t *testing.T) {
	employees := docs(t,
		`{"_id":1,"name":"Dev"}`,
		`{"_id":2,"name":"Eliot","reportsTo":"Dev"}`,
		`{"_id":3,"name":"Ron","reportsTo":"Eliot"}`,
		`{"_id":4,"name":"Andrew","reportsTo":"Eliot"}`,
		`{"_id":5,"name":"Asya","reportsTo":"Ron"}`,
		`{"_id":6,"name":"Dan","reportsTo":"Andrew"}`,
	)
	reads := 0
	env := &Env{Read: memReader(map[string][]bson.D{"employees": employees}, &reads)}
	cases := []struct {
		spec string
		want []string
	}{
		{`{"from":"employees","startWith":"$reportsTo","connectFromField":"reportsTo","connectToField":"name","as":"h","depthField":"d"}`,
			[]string{`[]`, `[{"_id":1,"name":"Dev","d":0}]`, `[{"_id":2,"name":"Eliot","reportsTo":"Dev","d":0},{"_id":1,"name":"Dev","d":1}]`}},
		{`{"from":"employees","startWith":"$reportsTo","connectFromField":"reportsTo","connectToField":"name","as":"h","maxDepth":0}`,
			[]string{`[]`, `[{"_id":1,"name":"Dev"}]`, `[{"_id":2,"name":"Eliot","reportsTo":"Dev"}]`}},
		{`{"from":"employees","startWith":"$name","connectFromField":"name","connectToField":"reportsTo","as":"h","restrictSearchWithMatch":{"_id":{"$ne":4}}}`,
			[]string{`[{"_id":2,"name":"Eliot","reportsTo":"Dev"},{"_id":3,"name":"Ron","reportsTo":"Eliot"},{"_id":5,"name":"Asya","reportsTo":"Ron"}]`,
				`[{"_id":3,"name":"Ron","reportsTo":"Eliot"},{"_id":5,"name":"Asya","reportsTo":"Ron"}]`,
				`[{"_id":5,"name":"Asya","reportsTo":"Ron"}]`}},
	}
	for _, c := range cases {
		got, err := run(t, env, employees[:3], parse(t, `{"$graphLookup":`+c.spec+`}`), parse(t, `{"$project":{"_id":0,"h":1}}`))
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		for i := range got {
			got[i] = strings.TrimSuffix(strings.TrimPrefix(got[i], `{"h":`), "}")
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", c.spec, strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
		}
	}
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		{`{"from":"employees","startWith":"$a","connectFromField":"a","as":"h"}`, mongoerr.Location40105},
		{`{"from":"employees","startWith":"$a","connectFromField":"a","connectToField":"b","as":"h","maxDepth":-1}`, mongoerr.Location40101},
		{`{"from":"employees","startWith":"$a","connectFromField":"a","connectToField":"b","as":"h","frob":1}`, mongoerr.Location40104},
		{`{"from":"employees","startWith":"$a","connectFromField":1,"connectToField":"b","as":"h"}`, mongoerr.Location40103},
	} {
		if _, err := Build([]bson.D{parse(t, `{"$graphLookup":`+c.spec+`}`)}, &docsSink{}, env); !hasCode(err, c.code) {
			t.Errorf("%s: got %v, want %d", c.spec, err, c.code)
		}
	}
}

// A cycle ends: every document is found once.
func TestGraphLookupCycle(t *testing.T) {
	ring := docs(t, `{"_id":1,"next":2}`, `{"_id":2,"next":3}`, `{"_id":3,"next":1}`)
	reads := 0
	env := &Env{Read: memReader(map[string][]bson.D{"ring": ring}, &reads)}
	got, err := run(t, env, ring[:1], parse(t, `{"$graphLookup":{"from":"ring","startWith":"$next","connectFromField":"next","connectToField":"_id","as":"all"}}`),
		parse(t, `{"$project":{"n":{"$size":"$all"}}}`))
	if err != nil || len(got) != 1 || got[0] != `{"_id":1,"n":3}` || reads > 4 {
		t.Fatalf("%v %v after %d reads", got, err, reads)
	}
}

func TestBucketAuto(t *testing.T) {
	var input []bson.D
	for _, v := range []int32{5, 1, 2, 2, 2, 3, 8, 9, 4, 7} {
		input = append(input, bson.D{{Key: "v", Value: v}})
	}
	input = append(input, bson.D{{Key: "w", Value: int32(1)}}) // missing: null, first in order
	cases := []struct {
		spec string
		want []string
	}{
		{`{"groupBy":"$v","buckets":3}`, []string{
			// 11 documents, about 4 a bucket; the third 2 joins the first.
			`{"_id":{"min":null,"max":3},"count":5}`,
			`{"_id":{"min":3,"max":8},"count":4}`,
			`{"_id":{"min":8,"max":9},"count":2}`}},
		{`{"groupBy":"$v","buckets":20,"output":{"vs":{"$push":"$v"},"s":{"$sum":"$v"}}}`, nil},
		{`{"groupBy":"$v","buckets":1,"output":{"lo":{"$min":"$v"},"hi":{"$max":"$v"}}}`, []string{
			`{"_id":{"min":null,"max":9},"lo":1,"hi":9}`}},
	}
	for _, c := range cases {
		got, err := run(t, &Env{}, input, parse(t, `{"$bucketAuto":`+c.spec+`}`))
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if c.want == nil {
			// More buckets than documents: one bucket per distinct value.
			if len(got) != 9 {
				t.Errorf("%s: %d buckets: %v", c.spec, len(got), got)
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", c.spec, strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
		}
	}
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		{`{"groupBy":"$v"}`, mongoerr.Location40246},
		{`{"groupBy":"$v","buckets":0}`, mongoerr.Location40243},
		{`{"groupBy":"$v","buckets":1.5}`, mongoerr.Location40242},
		{`{"groupBy":"v","buckets":2}`, mongoerr.Location40239},
		{`{"groupBy":"$v","buckets":2,"granularity":"R5"}`, mongoerr.NotImplemented},
		{`{"groupBy":"$v","buckets":2,"frob":1}`, mongoerr.Location40245},
	} {
		if _, err := Build([]bson.D{parse(t, `{"$bucketAuto":`+c.spec+`}`)}, &docsSink{}, &Env{}); !hasCode(err, c.code) {
			t.Errorf("%s: got %v, want %d", c.spec, err, c.code)
		}
	}
}
