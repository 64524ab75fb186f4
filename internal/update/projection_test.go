package update

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

func TestProjection(t *testing.T) {
	doc := d("_id", 1, "a", int32(1), "b", d("c", 2, "d", 3), "e", a(d("f", 1, "g", 2), d("g", 3), int32(4), a(d("f", 5))), "h", "x")
	cases := []struct {
		name string
		spec bson.D
		want bson.D
	}{
		{name: "empty returns all", spec: d(), want: doc},
		{name: "inclusion keeps _id and document order",
			spec: d("h", 1, "a", true), want: d("_id", 1, "a", int32(1), "h", "x")},
		{name: "inclusion without _id", spec: d("_id", 0, "a", 1), want: d("a", int32(1))},
		{name: "only _id", spec: d("_id", 1), want: d("_id", 1)},
		{name: "exclusion", spec: d("a", 0, "e", false), want: d("_id", 1, "b", d("c", 2, "d", 3), "h", "x")},
		{name: "exclusion of _id only", spec: d("_id", 0),
			want: d("a", int32(1), "b", d("c", 2, "d", 3), "e", doc[3].Value, "h", "x")},
		{name: "_id included explicitly in exclusion", spec: d("_id", 1, "a", 0, "b", 0, "e", 0),
			want: d("_id", 1, "h", "x")},
		{name: "any non-zero number includes", spec: d("a", 2.5, "h", int64(-1)), want: d("_id", 1, "a", int32(1), "h", "x")},
		{name: "dotted inclusion", spec: d("b.d", 1), want: d("_id", 1, "b", d("d", 3))},
		{name: "embedded spec inclusion", spec: d("b", d("d", 1)), want: d("_id", 1, "b", d("d", 3))},
		{name: "dotted exclusion", spec: d("b.d", 0, "e.g", 0),
			want: d("_id", 1, "a", int32(1), "b", d("c", 2), "e", a(d("f", 1), d(), int32(4), a(d("f", 5))), "h", "x")},
		{name: "dotted inclusion through array of documents",
			spec: d("e.f", 1), want: d("_id", 1, "e", a(d("f", 1), d(), a(d("f", 5))))},
		{name: "dotted inclusion through scalar drops the field", spec: d("a.x", 1, "h.y", 1), want: d("_id", 1)},
		{name: "dotted inclusion missing subfield keeps empty document", spec: d("b.zz", 1), want: d("_id", 1, "b", d())},
		{name: "_id subfield replaces default _id", spec: d("_id.x", 1), want: d()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProjection(tc.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := copyDoc(doc)
			checkDoc(t, mustApply(t, p, doc), tc.want)
			checkDoc(t, doc, before)
		})
	}
}

func TestProjectionIDSubfield(t *testing.T) {
	p, err := ParseProjection(d("_id.x", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, mustApply(t, p, d("_id", d("x", 1, "y", 2), "a", 1)), d("_id", d("x", 1)))
	p, err = ParseProjection(d("_id.x", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, mustApply(t, p, d("_id", d("x", 1, "y", 2), "a", 1)), d("_id", d("y", 2), "a", 1))
}

func TestProjectionSlice(t *testing.T) {
	doc := d("_id", 1, "a", a(1, 2, 3, 4, 5), "b", "x", "c", d("l", a(1, 2, 3)))
	cases := []struct {
		name string
		spec bson.D
		want bson.D
	}{
		{name: "alone is exclusion style", spec: d("a", d("$slice", int32(2))),
			want: d("_id", 1, "a", a(1, 2), "b", "x", "c", d("l", a(1, 2, 3)))},
		{name: "negative", spec: d("a", d("$slice", int32(-2)), "b", 0),
			want: d("_id", 1, "a", a(4, 5), "c", d("l", a(1, 2, 3)))},
		{name: "with inclusion", spec: d("b", 1, "a", d("$slice", int64(1))),
			want: d("_id", 1, "a", a(1), "b", "x")},
		{name: "skip limit", spec: d("_id", 0, "a", d("$slice", a(int32(1), int32(2))), "b", 1),
			want: d("a", a(2, 3), "b", "x")},
		{name: "negative skip", spec: d("a", d("$slice", a(int32(-2), int32(5)))),
			want: d("_id", 1, "a", a(4, 5), "b", "x", "c", d("l", a(1, 2, 3)))},
		{name: "skip past end", spec: d("a", d("$slice", a(int32(9), int32(1))), "b", 0, "c", 0),
			want: d("_id", 1, "a", a())},
		{name: "large limit", spec: d("a", d("$slice", int32(50)), "b", 0, "c", 0),
			want: d("_id", 1, "a", a(1, 2, 3, 4, 5))},
		{name: "dotted", spec: d("c.l", d("$slice", int32(-1)), "a", 0),
			want: d("_id", 1, "b", "x", "c", d("l", a(3)))},
		{name: "non-array untouched", spec: d("b", d("$slice", int32(1)), "_id", 1),
			want: d("_id", 1, "b", "x")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProjection(tc.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkDoc(t, mustApply(t, p, doc), tc.want)
		})
	}
}

func TestProjectionErrors(t *testing.T) {
	cases := []struct {
		name string
		spec bson.D
		code mongoerr.Code
		msg  string
	}{
		{name: "exclusion in inclusion", spec: d("a", 1, "b", 0),
			code: codeProjectionExclusionInInclusion, msg: "Cannot do exclusion on field b in inclusion projection"},
		{name: "inclusion in exclusion", spec: d("a", 0, "b.c", 1),
			code: codeProjectionInclusionInExclusion, msg: "Cannot do inclusion on field b.c in exclusion projection"},
		{name: "mixed inside embedded spec", spec: d("a", d("b", 1, "c", 0)),
			code: codeProjectionExclusionInInclusion, msg: "field a.c"},
		{name: "path collision, prefix first", spec: d("a", 1, "a.b", 1),
			code: codeProjectionPathCollisionSub, msg: "Path collision at a.b remaining portion b"},
		{name: "path collision, prefix last", spec: d("a.b", 1, "a", 1),
			code: codeProjectionPathCollision, msg: "Path collision at a"},
		{name: "duplicate", spec: d("a", 1, "a", 1), code: codeProjectionPathCollision},
		{name: "empty name", spec: d("", 1), code: mongoerr.Code(40352)},
		{name: "empty component", spec: d("a..b", 1), code: mongoerr.Code(15998)},
		{name: "dollar name", spec: d("$a", 1), code: mongoerr.Code(16410)},
		{name: "empty sub-projection", spec: d("a", d()), code: mongoerr.FailedToParse},
		{name: "expression", spec: d("a", "$b"), code: mongoerr.NotImplemented},
		{name: "unknown operator", spec: d("a", d("$meta", "textScore")), code: mongoerr.NotImplemented},
		{name: "bad slice", spec: d("a", d("$slice", "x")), code: mongoerr.Code(31273)},
		{name: "bad slice array", spec: d("a", d("$slice", a(int32(1)))), code: mongoerr.Code(31272)},
		{name: "slice skip not a number", spec: d("a", d("$slice", a("x", int32(1)))), code: mongoerr.Code(31257)},
		{name: "slice limit not a number", spec: d("a", d("$slice", a(int32(1), "x"))), code: mongoerr.Code(31258)},
		{name: "slice non-positive limit", spec: d("a", d("$slice", a(int32(1), int32(0)))), code: mongoerr.Code(31259)},
		{name: "elemMatch nested", spec: d("a.b", d("$elemMatch", d("x", 1))), code: mongoerr.Code(31275)},
		{name: "elemMatch not a document", spec: d("a", d("$elemMatch", int32(1))), code: mongoerr.Code(31274)},
		{name: "positional without a query", spec: d("a.$", 1), code: mongoerr.Code(51050)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProjection(tc.spec, nil)
			checkErr(t, err, tc.code, tc.msg)
		})
	}
}

func TestProjectionElemMatch(t *testing.T) {
	doc := d("_id", 1, "g", a(d("s", 70, "k", "x"), d("s", 90, "k", "y"), d("s", 95, "k", "z")), "n", a(1, 5, 9), "o", "keep")
	cases := []struct {
		name string
		spec bson.D
		want bson.D
	}{
		{name: "first matching document", spec: d("g", d("$elemMatch", d("s", d("$gt", 80)))),
			want: d("_id", 1, "g", a(d("s", 90, "k", "y")))},
		{name: "operators on scalars", spec: d("n", d("$elemMatch", d("$gt", 3))),
			want: d("_id", 1, "n", a(5))},
		{name: "no match drops the field", spec: d("g", d("$elemMatch", d("s", 1)), "o", 1),
			want: d("_id", 1, "o", "keep")},
		{name: "not an array drops the field", spec: d("o", d("$elemMatch", d("s", 1))),
			want: d("_id", 1)},
		// MongoDB 4.4+: the $elemMatch field comes after the other
		// included fields, in the projection's order.
		{name: "after the other fields", spec: d("n", d("$elemMatch", d("$gt", 3)), "o", 1, "g", d("$elemMatch", d("k", "z"))),
			want: d("_id", 1, "o", "keep", "n", a(5), "g", a(d("s", 95, "k", "z")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProjection(tc.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkDoc(t, mustApply(t, p, doc), tc.want)
		})
	}
	_, err := ParseProjection(d("g", d("$elemMatch", d("s", 1)), "o", 0), nil)
	checkErr(t, err, codeProjectionExclusionInInclusion, "")
	_, err = ParseProjection(d("g", d("$elemMatch", d("s", d("$bogus", 1)))), nil)
	if err == nil {
		t.Fatal("invalid $elemMatch accepted")
	}
}

func mustApply(t *testing.T, p *Projection, doc bson.D) bson.D {
	t.Helper()
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPositionalProjection(t *testing.T) {
	filter := func(f bson.D) *query.Filter {
		q, err := query.ParseFilter(f)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	doc := d("_id", 1, "a", a(1, 5, 9), "b", d("c", a(d("x", 1, "y", 2), d("x", 3, "y", 4))), "z", 7)
	cases := []struct {
		name  string
		query bson.D
		spec  bson.D
		want  bson.D
		code  mongoerr.Code
	}{
		{name: "array of scalars", query: d("a", d("$gt", 4)), spec: d("a.$", 1), want: d("_id", 1, "a", a(5))},
		{name: "with other fields", query: d("a", 9), spec: d("z", 1, "a.$", 1), want: d("_id", 1, "a", a(9), "z", 7)},
		{name: "nested path", query: d("b.c.x", 3), spec: d("b.c.$", 1), want: d("_id", 1, "b", d("c", a(d("x", 3, "y", 4))))},
		{name: "sub-field of the element", query: d("b.c.x", 3), spec: d("b.c.y.$", 1), want: d("_id", 1, "b", d("c", a(d("y", 4))))},
		{name: "elemMatch query", query: d("b.c", d("$elemMatch", d("y", 2))), spec: d("b.c.$", 1), want: d("_id", 1, "b", d("c", a(d("x", 1, "y", 2))))},
		{name: "no array on the path leaves it", query: d("z", 7), spec: d("z.$", 1), want: d("_id", 1, "z", 7)},
		{name: "no position recorded", query: d("z", 7, "a", a(1, 5, 9)), spec: d("a.$", 1), code: mongoerr.Code(51246)},
		{name: "query not on the field", query: d("z", 7), spec: d("a.$", 1), code: mongoerr.Code(31277)},
		{name: "two positionals", query: d("a", 1), spec: d("a.$", 1, "b.$", 1), code: mongoerr.Code(31276)},
		{name: "positional and elemMatch", query: d("a", 1), spec: d("b", d("$elemMatch", d("x", 1)), "a.$", 1), code: mongoerr.Code(31256)},
		{name: "positional with a sub-object", query: d("a", 1), spec: d("a.$", d("x", 1)), code: mongoerr.Code(31271)},
		{name: "positional in exclusion", query: d("a", 1), spec: d("z", 0, "a.$", 1), code: codeProjectionInclusionInExclusion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filter(tc.query)
			p, err := ParseProjection(tc.spec, f)
			if err == nil {
				if !f.Match(doc) {
					t.Fatal("query does not match the document")
				}
				var got bson.D
				got, err = p.Apply(doc)
				if err == nil && tc.code == 0 {
					checkDoc(t, got, tc.want)
					return
				}
			}
			checkErr(t, err, tc.code, "")
		})
	}
}
