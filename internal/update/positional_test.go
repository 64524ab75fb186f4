package update

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func applyPositional(t *testing.T, doc, upd bson.D, filters bson.A, matched string) (bson.D, error) {
	t.Helper()
	u, err := ParseWithOptions(upd, Options{ArrayFilters: filters})
	if err != nil {
		return nil, err
	}
	out, _, err := u.ApplyWith(doc, ApplyParams{Matched: matched})
	return out, err
}

func TestPositionalUpdates(t *testing.T) {
	cases := []struct {
		name    string
		doc     bson.D
		upd     bson.D
		filters bson.A
		matched string
		want    bson.D
		code    mongoerr.Code
		msg     string
	}{
		{name: "$ uses the matched position", doc: d("_id", 1, "a", a(1, 2, 3)),
			upd: d("$set", d("a.$", 9)), matched: "1", want: d("_id", 1, "a", a(1, 9, 3))},
		{name: "$ then a field", doc: d("_id", 1, "a", a(d("b", 1), d("b", 2))),
			upd: d("$inc", d("a.$.b", 10)), matched: "1", want: d("_id", 1, "a", a(d("b", 1), d("b", 12)))},
		{name: "$[] sets every element", doc: d("_id", 0, "a", a(0, 1, 0, 1)),
			upd: d("$set", d("a.$[]", 3)), want: d("_id", 0, "a", a(3, 3, 3, 3))},
		{name: "$[] unset nulls elements", doc: d("_id", 0, "a", a(0, 1)),
			upd: d("$unset", d("a.$[]", true)), want: d("_id", 0, "a", a(nil, nil))},
		{name: "$[i] with a filter on scalars", doc: d("_id", 0, "a", a(0, 1, 0, 1)),
			upd: d("$set", d("a.$[i]", 2)), filters: a(d("i", 0)), want: d("_id", 0, "a", a(2, 1, 2, 1))},
		{name: "$[i] on documents", doc: d("_id", 0, "a", a(d("b", 0, "c", 1), d("b", 0, "c", -1), d("b", 1, "c", 1))),
			upd: d("$min", d("a.$[i].c", 0)), filters: a(d("i.b", 0)),
			want: d("_id", 0, "a", a(d("b", 0, "c", 0), d("b", 0, "c", -1), d("b", 1, "c", 1)))},
		{name: "nested $[] and $[j]", doc: d("_id", 0, "a", a(a(0, 1), a(0, 1))),
			upd: d("$set", d("a.$[].$[j]", 2)), filters: a(d("j", 0)), want: d("_id", 0, "a", a(a(2, 1), a(2, 1)))},
		{name: "nested filters", doc: d("_id", 0, "a", a(d("b", 0, "c", a(d("d", 0), d("d", 1))), d("b", 1, "c", a(d("d", 0), d("d", 1))))),
			upd: d("$set", d("a.$[i].c.$[j].d", 2)), filters: a(d("i.b", 0), d("j.d", 0)),
			want: d("_id", 0, "a", a(d("b", 0, "c", a(d("d", 2), d("d", 1))), d("b", 1, "c", a(d("d", 0), d("d", 1)))))},
		{name: "logical array filter", doc: d("_id", 0, "a", a(0, 1, 3)),
			upd: d("$set", d("a.$[i]", 2)), filters: a(d("$or", a(d("i", 0), d("i", 3)))), want: d("_id", 0, "a", a(2, 1, 2))},
		{name: "$[] push into arrays", doc: d("_id", 0, "a", a(a(0), a(1))),
			upd: d("$addToSet", d("a.$[]", 2)), want: d("_id", 0, "a", a(a(0, 2), a(1, 2)))},
		{name: "disjoint filters do not conflict", doc: d("_id", 0, "a", a(d("x", 0, "c", 0), d("x", 1, "c", 0))),
			upd: d("$set", d("a.$[i].c", 1, "a.$[j].c", 2)), filters: a(d("i.x", 0), d("j.x", 1)),
			want: d("_id", 0, "a", a(d("x", 0, "c", 1), d("x", 1, "c", 2)))},
		{name: "overlapping filters conflict", doc: d("_id", 0, "a", a(d("x", 0, "b", a(d("y", 0, "c", 0))))),
			upd: d("$set", d("a.$[i].b.$[k].c", 1, "a.$[j].b.$[k].c", 2)), filters: a(d("i.x", 0), d("j.x", 0), d("k.y", 0)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.0.b.$[k].c'"},
		{name: "overlapping inner filters conflict", doc: d("_id", 0, "a", a(d("x", 0, "b", a(d("y", 0, "c", 0))))),
			upd: d("$set", d("a.$[i].b.$[k].c", 1, "a.$[j].b.$[m].c", 2)), filters: a(d("i.x", 0), d("j.x", 0), d("k.y", 0), d("m.y", 0)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.0.b.0.c'"},
		{name: "$ and its index conflict", doc: d("_id", 0, "a", a(1, 2)),
			upd: d("$set", d("a.$", 1, "a.0", 2)), matched: "0",
			code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.0'"},
		{name: "no match for $", doc: d("_id", 0, "a", a(1)), upd: d("$set", d("a.$", 1)),
			code: mongoerr.BadValue, msg: "The positional operator did not find the match needed from the query."},
		{name: "$[] over a scalar", doc: d("_id", 0, "a", 1), upd: d("$set", d("a.$[]", 1)),
			code: mongoerr.BadValue, msg: "Cannot apply array updates to non-array element a: 1"},
		{name: "$[] over a missing path", doc: d("_id", 0), upd: d("$set", d("a.b.$[]", 1)),
			code: mongoerr.BadValue, msg: "The path 'a.b' must exist in the document in order to apply array updates."},
		{name: "field below a scalar element", doc: d("_id", 0, "a", a(1)), upd: d("$set", d("a.$[].b", 1)),
			code: mongoerr.PathNotViable},
		{name: "undefined identifier", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 0)),
			code: mongoerr.BadValue, msg: "No array filter found for identifier 'i' in path 'a.$[i]'"},
		{name: "unused filter", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 5)), filters: a(d("i", 0), d("j", 0)),
			code: mongoerr.FailedToParse, msg: "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: 5 } }"},
		{name: "two identifiers in one filter", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 5)), filters: a(d("i", 0, "j", 0)),
			code: mongoerr.FailedToParse, msg: "Expected a single top-level field name, found 'i' and 'j'"},
		{name: "duplicate filters", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 5)), filters: a(d("i", 0), d("i", 1)),
			code: mongoerr.FailedToParse, msg: "Found multiple array filters with the same top-level field name i"},
		{name: "uppercase identifier", doc: d("_id", 0), upd: d("$set", d("a.$[I]", 5)), filters: a(d("I", 0)),
			code: mongoerr.BadValue, msg: "must be an alphanumeric string beginning with a lowercase letter, found 'I'"},
		{name: "array and field children conflict", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 0, "a.b", 0)), filters: a(d("i", 0)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.b' would create a conflict at 'a'"},
		{name: "array and $ conflict", doc: d("_id", 0), upd: d("$set", d("a.$[i]", 0, "a.$", 0)), filters: a(d("i", 0)),
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.$' would create a conflict at 'a'"},
		{name: "two $", doc: d("_id", 0), upd: d("$set", d("a.$.b.$", 0)),
			code: mongoerr.BadValue, msg: "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"},
		{name: "first $", doc: d("_id", 0), upd: d("$set", d("$", 0)),
			code: mongoerr.BadValue, msg: "Cannot have positional (i.e. '$') element in the first position in path '$'"},
		{name: "dynamic rename source", doc: d("_id", 0), upd: d("$rename", d("a.$[]", "b")),
			code: mongoerr.BadValue, msg: "The source field for $rename may not be dynamic: a.$[]"},
		{name: "dynamic rename destination", doc: d("_id", 0), upd: d("$rename", d("a", "b.$[]")),
			code: mongoerr.BadValue, msg: "The destination field for $rename may not be dynamic: b.$[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := copyDoc(tc.doc)
			got, err := applyPositional(t, tc.doc, tc.upd, tc.filters, tc.matched)
			if !identical(before, tc.doc) {
				t.Fatalf("input modified")
			}
			if tc.code != 0 {
				checkErr(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkDoc(t, got, tc.want)
		})
	}
}

func TestPositionalUpsert(t *testing.T) {
	u, err := Parse(d("$set", d("a.$[]", 5)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpsertDocument(d("_id", 1, "a", a(1, 2)), u)
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, got, d("_id", 1, "a", a(5, 5)))
	if _, err = UpsertDocument(d("_id", 1), u); err == nil {
		t.Fatal("want an error for $[] on a missing array")
	}
	u, _ = Parse(d("$set", d("a.$", 5)))
	_, err = UpsertDocument(d("a", 1), u)
	checkErr(t, err, mongoerr.BadValue, "The positional operator did not find the match")
}

func TestBit(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "and int32", doc: d("_id", 1, "a", int32(13)), update: d("$bit", d("a", d("and", int32(10)))),
			want: d("_id", 1, "a", int32(8)), changed: true},
		{name: "or with int64 widens", doc: d("_id", 1, "a", int32(1)), update: d("$bit", d("a", d("or", int64(4)))),
			want: d("_id", 1, "a", int64(5)), changed: true},
		{name: "xor then and in order", doc: d("_id", 1, "a", int64(12)), update: d("$bit", d("a", d("xor", int32(5), "and", int32(7)))),
			want: d("_id", 1, "a", int64(1)), changed: true},
		{name: "missing field starts at zero", doc: d("_id", 1), update: d("$bit", d("a", d("or", int32(6)))),
			want: d("_id", 1, "a", int32(6)), changed: true},
		{name: "no-op", doc: d("_id", 1, "a", int32(3)), update: d("$bit", d("a", d("or", int32(1)))),
			want: d("_id", 1, "a", int32(3)), changed: false},
		{name: "double field", doc: d("_id", 1, "a", 1.5), update: d("$bit", d("a", d("or", int32(1)))),
			code: mongoerr.BadValue, msg: "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type double"},
		{name: "double operand", update: d("$bit", d("a", d("or", 1.0))),
			code: mongoerr.BadValue, msg: "The $bit modifier field must be an Integer(32/64 bit); a 'double' is not supported here: {or: 1.0}"},
		{name: "unknown operator", update: d("$bit", d("a", d("not", int32(1)))),
			code: mongoerr.BadValue, msg: "The $bit modifier only supports 'and', 'or', and 'xor', not 'not'"},
		{name: "not a document", update: d("$bit", d("a", int32(1))),
			code: mongoerr.BadValue, msg: "The $bit modifier is not compatible with a int"},
		{name: "empty", update: d("$bit", d("a", d())),
			code: mongoerr.BadValue, msg: "You must pass in at least one bitwise operation"},
	})
}
