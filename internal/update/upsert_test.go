package update

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestUpsertDocument(t *testing.T) {
	cases := []struct {
		name   string
		eqs    bson.D
		update bson.D
		want   bson.D // nil _id value means "generated ObjectID"
		code   mongoerr.Code
		msg    string
	}{
		{name: "equalities expanded, then operators",
			eqs:    d("a.b", 1, "c", 2, "_id", 7),
			update: d("$set", d("d", 3), "$setOnInsert", d("e", 4)),
			want:   d("_id", 7, "a", d("b", 1), "c", 2, "d", 3, "e", 4)},
		{name: "operators override equalities",
			eqs: d("_id", 1, "a", 1), update: d("$inc", d("a", int32(2))),
			want: d("_id", 1, "a", int32(3))},
		{name: "shared prefixes merge",
			eqs: d("_id", 1, "x.a", 1, "x.b", 2), update: d("$set", d("x.c", 3)),
			want: d("_id", 1, "x", d("a", 1, "b", 2, "c", 3))},
		{name: "setOnInsert may set _id when the filter has none",
			eqs: d("a", 1), update: d("$setOnInsert", d("_id", "k")),
			want: d("_id", "k", "a", 1)},
		{name: "changing filter _id refused",
			eqs: d("_id", 1), update: d("$set", d("_id", 2)),
			code: mongoerr.ImmutableField},
		{name: "conflicting equalities",
			eqs: d("a", 1, "a.b", 2), update: d("$set", d("x", 1)),
			code: codeNotSingleValueField, msg: "both paths 'a.b' and 'a' are matched"},
		{name: "conflicting equalities, longer first",
			eqs: d("a.b", 2, "a", 1), update: d("$set", d("x", 1)),
			code: codeNotSingleValueField, msg: "both paths 'a.b' and 'a' are matched"},
		{name: "replacement takes filter _id",
			eqs: d("a", 1, "_id", 5), update: d("b", 2),
			want: d("_id", 5, "b", 2)},
		{name: "replacement own _id wins when equal",
			eqs: d("_id", 5), update: d("b", 2, "_id", 5),
			want: d("_id", 5, "b", 2)},
		{name: "replacement _id different from filter",
			eqs: d("_id", 5), update: d("_id", 6),
			code: mongoerr.ImmutableField},
		{name: "replacement own _id without filter _id",
			eqs: d("a", 1), update: d("b", 2, "_id", 9),
			want: d("_id", 9, "b", 2)},
		{name: "replacement without any _id gets one",
			eqs: d("a", 1), update: d("b", 2),
			want: d("_id", nil, "b", 2)},
		{name: "operator update without any _id gets one",
			eqs: d("a", 1), update: d("$set", d("b", 2)),
			want: d("_id", nil, "a", 1, "b", 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Parse(tc.update)
			if err != nil {
				t.Fatal(err)
			}
			got, err := UpsertDocument(tc.eqs, u)
			if tc.code != 0 {
				checkErr(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want[0].Value == nil {
				if len(got) == 0 || got[0].Key != "_id" {
					t.Fatalf("no leading _id: %s", formatValue(got))
				}
				if _, ok := got[0].Value.(bson.ObjectID); !ok {
					t.Fatalf("generated _id is %T", got[0].Value)
				}
				got = append(bson.D{{Key: "_id", Value: nil}}, got[1:]...)
			}
			checkDoc(t, got, tc.want)
		})
	}
}
