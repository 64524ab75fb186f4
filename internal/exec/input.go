package exec

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/query"
)

// Feed is how a pipeline over the read's collection gets its input: the
// stages left to run and the read that pushes documents into them (until
// push returns an error; ErrDone stops early). The spec's filter is the
// pipeline's leading $match, its sort the leading $sort (LeadingSort),
// limitHint how many documents that $sort passes on (Walk).
//
// When the first stages only count their input (countsOnly), they get as
// many empty documents as match, counted without decoding what the
// filter can match on the BSON bytes (Count). When an index serves the
// leading $sort, that stage is dropped and the read walks the index
// (Walk). Otherwise every match comes in _id order (Each) and every stage
// runs.
func (r *Read) Feed(stages []bson.D, limitHint int64) ([]bson.D, func(ctx context.Context, push func(bson.D) error) error) {
	unsorted := func() *Read {
		u, rs := *r, *r.Spec
		rs.Sort = query.Sort{}
		u.Spec = &rs
		return &u
	}
	if countsOnly(stages) {
		return stages, func(ctx context.Context, push func(bson.D) error) error {
			n, err := unsorted().Count(ctx)
			if err != nil {
				return err
			}
			for range n {
				if err := push(bson.D{}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if plan, ok := r.IndexSort(); ok {
		return stages[1:], func(ctx context.Context, push func(bson.D) error) error {
			return r.Walk(ctx, plan, limitHint, push)
		}
	}
	return stages, func(ctx context.Context, push func(bson.D) error) error {
		return unsorted().Each(ctx, func(doc bson.D, _ bson.Raw) (bool, error) {
			if err := push(doc); err != nil {
				return err == ErrDone, err
			}
			return false, nil
		})
	}
}

// LeadingSort is the sort of a $sort first in stages (zero when there is
// none or it does not parse: building the stage reports that) and how
// many documents the $skip and $limit right after it let through.
func LeadingSort(stages []bson.D) (query.Sort, int64) {
	if len(stages) == 0 || stages[0][0].Key != "$sort" {
		return query.Sort{}, 0
	}
	d, ok := stages[0][0].Value.(bson.D)
	if !ok {
		return query.Sort{}, 0
	}
	s, err := query.ParseSort(d)
	if err != nil {
		return query.Sort{}, 0
	}
	var hint int64
	for _, st := range stages[1:] {
		n, ok := query.AsInt(st[0].Value)
		if !ok || n < 0 || (st[0].Key != "$skip" && st[0].Key != "$limit") {
			break
		}
		hint += n
		if st[0].Key == "$limit" {
			return s, hint
		}
	}
	return s, 0
}

// countsOnly reports whether a pipeline's first stages read nothing of
// their input documents but their number: $skip and $limit, then $count or
// a $group on a constant _id whose accumulators all $sum a constant number
// (what drivers send for countDocuments).
func countsOnly(stages []bson.D) bool {
	for _, st := range stages {
		switch st[0].Key {
		case "$skip", "$limit":
			continue
		case "$count":
			return true
		case "$group":
			g, ok := st[0].Value.(bson.D)
			if !ok || len(g) == 0 {
				return false
			}
			for _, e := range g {
				if e.Key == "_id" {
					if !constantID(e.Value) {
						return false
					}
					continue
				}
				acc, ok := e.Value.(bson.D)
				if !ok || len(acc) != 1 || acc[0].Key != "$sum" {
					return false
				}
				switch acc[0].Value.(type) {
				case int32, int64, float64:
				default:
					return false
				}
			}
			return true
		}
		return false
	}
	return false
}

// constantID is a $group _id that is the same for every document.
func constantID(v any) bool {
	switch x := v.(type) {
	case nil, int32, int64, float64, bool:
		return true
	case string:
		return !strings.HasPrefix(x, "$")
	}
	return false
}
