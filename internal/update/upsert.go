package update

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// UpsertDocument builds the document an upsert inserts when its filter
// matched nothing. equalities are the filter's top-level equality
// conditions (dotted paths allowed), as query.Filter.Equalities returns
// them.
//
// For an operator update the document starts as the equalities, with
// dotted paths expanded into embedded documents, and u is applied to it
// with $setOnInsert in effect. For a replacement it is the replacement
// document, with the filter's _id when the replacement has none. In both
// cases _id comes first and is generated (an ObjectID) when nothing
// supplied one. The result is not checked with ValidateForStorage.
func UpsertDocument(equalities bson.D, u *Update) (bson.D, error) {
	var base bson.D
	if u.isReplacement {
		if i := fieldIndex(equalities, "_id"); i >= 0 {
			base = bson.D{{Key: "_id", Value: equalities[i].Value}}
		}
	} else {
		var err error
		if base, err = docFromEqualities(equalities); err != nil {
			return nil, err
		}
	}
	out, _, err := u.Apply(base, true)
	if err != nil {
		return nil, err
	}
	out, _ = EnsureID(out)
	return out, nil
}

// docFromEqualities expands {"a.b": 1, c: 2} into {a: {b: 1}, c: 2}.
func docFromEqualities(eqs bson.D) (bson.D, error) {
	root := any(bson.D{})
	seen := map[string]bool{}
	prefixes := map[string]string{} // prefix -> a full path below it
	for _, e := range eqs {
		parts := strings.Split(e.Key, ".")
		if seen[e.Key] {
			return nil, mongoerr.Newf(codeNotSingleValueField,
				"cannot infer query fields to set, path '%s' is matched twice", e.Key)
		}
		if other, ok := prefixes[e.Key]; ok {
			return nil, mongoerr.Newf(codeNotSingleValueField,
				"cannot infer query fields to set, both paths '%s' and '%s' are matched", other, e.Key)
		}
		for i := 1; i < len(parts); i++ {
			p := strings.Join(parts[:i], ".")
			if seen[p] {
				return nil, mongoerr.Newf(codeNotSingleValueField,
					"cannot infer query fields to set, both paths '%s' and '%s' are matched", e.Key, p)
			}
			prefixes[p] = e.Key
		}
		seen[e.Key] = true
		if err := setPath(&root, parts, deepCopy(e.Value)); err != nil {
			return nil, err
		}
	}
	return root.(bson.D), nil
}
