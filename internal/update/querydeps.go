package update

// The value semantics shared with queries (cross-type ordering, equality,
// path lookup, filters) come from internal/query so that updates and
// queries can never disagree about them.

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// compareValues orders values as MongoDB sorts them; 0 means equal for
// $min, $max, $addToSet, $pullAll and $push sorting.
func compareValues(a, b any) int { return query.Compare(a, b) }

func lookupValue(d bson.D, path string) (any, bool) { return query.Lookup(d, path) }

// elementMatcher compiles $pull's condition on array elements.
func elementMatcher(cond any) (func(any) bool, error) { return query.ElementMatcher(cond) }

// elemMatchMatcher compiles a $elemMatch projection: an element qualifies
// when a one-element array holding it satisfies the $elemMatch query
// operator, which gives the projection exactly the query's semantics.
func elemMatchMatcher(spec bson.D) (func(any) bool, error) {
	f, err := query.ParseFilter(bson.D{{Key: "v", Value: bson.D{{Key: "$elemMatch", Value: spec}}}})
	if err != nil {
		return nil, err
	}
	return func(elem any) bool {
		return f.Match(bson.D{{Key: "v", Value: bson.A{elem}}})
	}, nil
}
