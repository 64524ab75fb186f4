package exec

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// memOutput is an Output over in-memory collections, keyed by _id.
type memOutput struct {
	colls     map[string]map[string]bson.D
	committed map[string]bool
	inserts   int // Insert calls, to see batching
	finds     int
	replaces  int
}

func newMemOutput() *memOutput {
	return &memOutput{colls: map[string]map[string]bson.D{}, committed: map[string]bool{}}
}

func idKey(d bson.D) string {
	id, _ := lookup(d, "_id")
	return string(query.AppendKey(nil, id))
}

type memOut struct {
	o    *memOutput
	name string
	docs map[string]bson.D
}

func (w *memOut) Insert(docs []bson.D) error {
	w.o.inserts++
	for _, d := range docs {
		k := idKey(d)
		if _, dup := w.docs[k]; dup {
			return mongoerr.New(mongoerr.DuplicateKey, "E11000")
		}
		w.docs[k] = d
	}
	return nil
}

func (w *memOut) Commit() error {
	w.o.colls[w.name] = w.docs
	w.o.committed[w.name] = true
	return nil
}

func (o *memOutput) Out(_ context.Context, db, coll string) (OutWriter, error) {
	return &memOut{o: o, name: db + "." + coll, docs: map[string]bson.D{}}, nil
}

type memTarget struct {
	o    *memOutput
	docs map[string]bson.D
}

func (o *memOutput) Merge(_ context.Context, db, coll string, on []string) (MergeTarget, error) {
	ns := db + "." + coll
	if o.colls[ns] == nil {
		o.colls[ns] = map[string]bson.D{}
	}
	return &memTarget{o: o, docs: o.colls[ns]}, nil
}

func (t *memTarget) Find(filter bson.D, fn func(bson.D, any) error) error {
	t.o.finds++
	f, err := query.ParseFilter(filter)
	if err != nil {
		return err
	}
	for k, d := range t.docs {
		if f.Match(d) {
			if err := fn(d, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *memTarget) Insert(docs []bson.D) error {
	t.o.inserts++
	for _, d := range docs {
		if _, dup := t.docs[idKey(d)]; dup {
			return mongoerr.New(mongoerr.DuplicateKey, "E11000")
		}
		t.docs[idKey(d)] = d
	}
	return nil
}

func (t *memTarget) Replace(tokens []any, docs []bson.D) ([]bool, error) {
	t.o.replaces++
	oks := make([]bool, len(docs))
	for i, d := range docs {
		t.docs[tokens[i].(string)] = d
		oks[i] = true
	}
	return oks, nil
}

func (o *memOutput) dump(ns string) string {
	var out []string
	for _, d := range o.colls[ns] {
		b, _ := bson.MarshalExtJSON(d, false, false)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// $out writes in batches and commits once, at the end; a failure before
// the end commits nothing.
func TestOutBatchesAndCommitsAtTheEnd(t *testing.T) {
	o := newMemOutput()
	env := &Env{DB: "d", Output: o}
	var input []bson.D
	for i := range 1200 {
		input = append(input, bson.D{{Key: "_id", Value: int32(i)}})
	}
	if _, err := run(t, env, input, parse(t, `{"$out":"t"}`)); err != nil {
		t.Fatal(err)
	}
	if len(o.colls["d.t"]) != 1200 || !o.committed["d.t"] || o.inserts != 3 {
		t.Fatalf("%d documents, committed %v, %d inserts", len(o.colls["d.t"]), o.committed["d.t"], o.inserts)
	}
	o = newMemOutput()
	_, err := run(t, &Env{DB: "d", Output: o}, docs(t, `{"_id":1}`, `{"_id":1}`), parse(t, `{"$out":{"db":"e","coll":"t"}}`))
	if !hasCode(err, mongoerr.DuplicateKey) || o.committed["e.t"] {
		t.Fatalf("err %v, committed %v", err, o.committed["e.t"])
	}
}

func TestMergeModes(t *testing.T) {
	input := docs(t, `{"_id":1,"a":10}`, `{"_id":2,"a":20}`, `{"_id":3,"a":30}`)
	cases := []struct {
		spec string
		want string
		code mongoerr.Code
	}{
		{`"t"`, `{"_id":1,"a":10,"b":1} {"_id":2,"a":20} {"_id":3,"a":30}`, 0},
		{`{"into":"t","whenMatched":"replace"}`, `{"_id":1,"a":10} {"_id":2,"a":20} {"_id":3,"a":30}`, 0},
		{`{"into":"t","whenMatched":"keepExisting","whenNotMatched":"discard"}`, `{"_id":1,"a":1,"b":1}`, 0},
		{`{"into":"t","whenMatched":[{"$set":{"a":{"$add":["$a","$$new.a","$$k"]}}}],"let":{"k":1000}}`,
			`{"_id":1,"a":1011,"b":1} {"_id":2,"a":20} {"_id":3,"a":30}`, 0},
		{`{"into":"t","whenMatched":"fail"}`, "", mongoerr.DuplicateKey},
		{`{"into":"t","whenNotMatched":"fail"}`, "", mongoerr.MergeStageNoMatchingDocument},
		{`{"into":"t","whenMatched":[{"$set":{"_id":5}}]}`, "", mongoerr.ImmutableField},
	}
	for _, c := range cases {
		o := newMemOutput()
		o.colls["d.t"] = map[string]bson.D{}
		seed := parse(t, `{"_id":1,"a":1,"b":1}`)
		o.colls["d.t"][idKey(seed)] = seed
		_, err := run(t, &Env{DB: "d", Output: o}, input, parse(t, `{"$merge":`+c.spec+`}`))
		switch {
		case c.code != 0 && !hasCode(err, c.code):
			t.Errorf("%s: got %v, want code %d", c.spec, err, c.code)
		case c.code == 0 && err != nil:
			t.Errorf("%s: %v", c.spec, err)
		case c.code == 0 && o.dump("d.t") != c.want:
			t.Errorf("%s:\ngot  %s\nwant %s", c.spec, o.dump("d.t"), c.want)
		}
	}
}

// Results are matched a batch at a time: one read of the target per
// batch, and a result repeating an earlier one's key sees its write.
func TestMergeBatchesAndRepeatedKeys(t *testing.T) {
	o := newMemOutput()
	var input []bson.D
	for i := range 1000 {
		input = append(input, bson.D{{Key: "_id", Value: int32(i % 600)}, {Key: fmt.Sprintf("f%d", i/600), Value: true}})
	}
	if _, err := run(t, &Env{DB: "d", Output: o}, input, parse(t, `{"$merge":"t"}`)); err != nil {
		t.Fatal(err)
	}
	if len(o.colls["d.t"]) != 600 || o.finds > 4 || o.replaces > 2 {
		t.Fatalf("%d documents, %d reads, %d replace batches", len(o.colls["d.t"]), o.finds, o.replaces)
	}
	if d := o.colls["d.t"][idKey(bson.D{{Key: "_id", Value: int32(5)}})]; len(d) != 3 {
		t.Fatalf("document 5 is %v, want both fields merged", d)
	}
	_, err := run(t, &Env{DB: "d", Output: o}, docs(t, `{"_id":1,"k":[1]}`), parse(t, `{"$merge":{"into":"t","on":"k"}}`))
	if !hasCode(err, mongoerr.Location51132) {
		t.Fatalf("an array 'on' value: %v", err)
	}
}

func TestWritingStagePlacement(t *testing.T) {
	env := &Env{DB: "d", Output: newMemOutput(), Read: func(context.Context, string, *query.Filter, func(bson.D) error) error { return nil }}
	for _, c := range []struct {
		pipeline []string
		code     mongoerr.Code
	}{
		{[]string{`{"$out":"t"}`, `{"$match":{}}`}, mongoerr.Location40601},
		{[]string{`{"$facet":{"a":[{"$merge":"t"}]}}`}, mongoerr.Location40600},
		{[]string{`{"$lookup":{"from":"x","pipeline":[{"$out":"t"}],"as":"a"}}`}, mongoerr.Location51047},
		{[]string{`{"$unionWith":{"coll":"x","pipeline":[{"$merge":"t"}]}}`}, mongoerr.Location31441},
		{[]string{`{"$out":"system.views"}`}, mongoerr.Location17385},
		{[]string{`{"$merge":{"into":"t","on":[]}}`}, mongoerr.Location51187},
	} {
		var stages []bson.D
		for _, s := range c.pipeline {
			stages = append(stages, parse(t, s))
		}
		if _, err := Build(stages, &docsSink{}, env); !hasCode(err, c.code) {
			t.Errorf("%v: got %v, want code %d", c.pipeline, err, c.code)
		}
	}
}

func hasCode(err error, c mongoerr.Code) bool {
	e, ok := mongoerr.As(err)
	return ok && e.Code == c
}
