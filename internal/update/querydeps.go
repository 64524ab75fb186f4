package update

// The value semantics shared with queries (cross-type ordering, equality,
// path lookup, filters) come from internal/query so that updates and
// queries can never disagree about them.

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// compareValues orders values as MongoDB sorts them; 0 means equal for
// $min, $max, $addToSet, $pullAll and $pull.
func compareValues(a, b any) int { return query.Compare(a, b) }

func lookupValue(d bson.D, path string) (any, bool) { return query.Lookup(d, path) }

// TEMPORARY until query.ParseFilter lands.
func elementMatcher(arg any) (func(any) bool, error) {
	if _, ok := arg.(bson.D); ok {
		return nil, mongoerr.New(mongoerr.NotImplemented, "stub")
	}
	return func(e any) bool { return compareValues(e, arg) == 0 }, nil
}

func elemMatchMatcher(spec bson.D) (func(any) bool, error) {
	return nil, mongoerr.New(mongoerr.NotImplemented, "stub")
}
