package exec

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
)

// Explain is the winning plan of a find, reading nothing: PostgreSQL's
// plan of the scan the read starts with, then how its sort runs, as an
// input stage: IXSCAN naming the index whose key column is walked (_id_
// for a sort by _id), SORT for a sort in memory (sortDoc is its pattern),
// none without a sort.
func (r *Read) Explain(ctx context.Context, sortDoc bson.D) (bson.D, error) {
	rs := r.Spec
	params := rs.scanParams(r.Col)
	var input bson.D
	if asc, ok := rs.Sort.ByIDOnly(); ok && !rs.Sort.IsEmpty() {
		params.Desc = !asc
		input = bson.D{{Key: "stage", Value: "IXSCAN"}, {Key: "indexName", Value: "_id_"}, {Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "direction", Value: direction(!asc)}}
	} else if plan, ok := r.IndexSort(); ok {
		params, input = newOrderedSource(r, plan).walkParams(), ixscanStage(plan)
	} else if !rs.Sort.IsEmpty() {
		input = bson.D{{Key: "stage", Value: "SORT"}, {Key: "sortPattern", Value: sortDoc}}
	}
	return r.explain(ctx, params, input)
}

// ExplainPipeline is the winning plan of a pipeline's read (its leading
// $match as the spec's filter, a leading $sort as its sort): PostgreSQL's
// plan of the scan, with an IXSCAN input stage when an index serves the
// sort, walked says so (the $sort stage then does not run). limitHint is
// as Walk's.
func (r *Read) ExplainPipeline(ctx context.Context, limitHint int64) (winning bson.D, walked bool, err error) {
	params := r.Spec.scanParams(r.Col)
	var input bson.D
	if plan, ok := r.IndexSort(); ok {
		src := newOrderedSource(r, plan)
		src.limitHint = limitHint
		params, input, walked = src.walkParams(), ixscanStage(plan), true
	}
	winning, err = r.explain(ctx, params, input)
	return winning, walked, err
}

func (r *Read) explain(ctx context.Context, params storage.ScanParams, input bson.D) (bson.D, error) {
	plan, err := r.Store.Explain(ctx, r.On, r.Col, params)
	if err != nil {
		return nil, err
	}
	winning := bson.D{{Key: "stage", Value: "POSTGRESQL"}, {Key: "plan", Value: plan}}
	if input != nil {
		winning = append(winning, bson.E{Key: "inputStage", Value: input})
	}
	return winning, nil
}

// ixscanStage describes an index walk for explain.
func ixscanStage(plan SortPlan) bson.D {
	pattern := bson.D{}
	for _, k := range plan.index.Keys {
		dir := int32(1)
		if k.Desc {
			dir = -1
		}
		pattern = append(pattern, bson.E{Key: k.Field, Value: dir})
	}
	return bson.D{
		{Key: "stage", Value: "IXSCAN"},
		{Key: "indexName", Value: plan.index.Name},
		{Key: "keyPattern", Value: pattern},
		{Key: "direction", Value: direction(plan.desc != plan.index.Keys[0].Desc)},
	}
}

func direction(desc bool) string {
	if desc {
		return "backward"
	}
	return "forward"
}

// PlanSummary describes how a read of col runs, in MongoDB's planSummary
// style: COLLSCAN, IDHACK, IXSCAN over the key columns the filter was
// pushed to or over the index walked for the sort, SORT for an in-memory
// sort, and the node when a standby serves it. Field names only, never
// values.
func PlanSummary(col *storage.Collection, rs *ReadSpec, p storage.ScanParams, memSort bool, on storage.On) string {
	var b strings.Builder
	switch {
	case p.Order != nil:
		for _, ix := range col.Indexes {
			if ix.Column == p.Order.Column {
				var fields []string
				for _, k := range ix.Keys {
					fields = append(fields, k.Field)
				}
				b.WriteString("IXSCAN {" + strings.Join(fields, ", ") + "} (sort)")
			}
		}
	case rs.Exact:
		b.WriteString("IDHACK")
	case p.Where == "" || p.Where == "TRUE":
		b.WriteString("COLLSCAN")
	default:
		var used []string
		for _, kc := range col.KeyColumns() {
			if strings.Contains(p.Where, kc.Column) {
				used = append(used, "{"+strings.Join(kc.Fields, ", ")+"}")
			}
		}
		if len(used) == 0 {
			used = []string{"?"}
		}
		b.WriteString("IXSCAN " + strings.Join(used, " "))
	}
	if memSort {
		b.WriteString(", SORT")
	}
	if n := on.Node; n != nil && !n.Primary {
		b.WriteString(", on " + n.Name)
	}
	return b.String()
}
