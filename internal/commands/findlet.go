package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/update"
)

// findReadSpec is parseReadSpec for find: the command's let variables
// and one $$NOW (the same in let and in every $expr of the filter) are in
// scope of the filter's $expr.
func findReadSpec(cmd bson.D, filter, sortDoc, proj bson.D, skip, limit int64) (*readSpec, error) {
	if _, hasLet := lookup(cmd, "let"); !hasLet && !hasExpr(filter) {
		return parseReadSpec(filter, sortDoc, proj, skip, limit) // nothing reads a variable
	}
	now := expr.Now()
	vars, err := letVarsAt(cmd, now)
	if err != nil {
		return nil, err
	}
	rs, err := parseReadSpec(nil, sortDoc, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	if rs.filter, err = query.ParseFilterVars(filter, expr.WithNow(vars, now)); err != nil {
		return nil, err
	}
	rs.empty, rs.exact = len(filter) == 0, isIDEquality(filter)
	if len(proj) > 0 {
		if rs.proj, err = update.ParseProjection(proj, rs.filter); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// hasExpr reports whether a filter has an $expr, at its top level or
// under $and, $or or $nor (the only places one may be).
func hasExpr(filter bson.D) bool {
	for _, e := range filter {
		switch e.Key {
		case "$expr":
			return true
		case "$and", "$or", "$nor":
			a, _ := e.Value.(bson.A)
			for _, c := range a {
				if d, ok := c.(bson.D); ok && hasExpr(d) {
					return true
				}
			}
		}
	}
	return false
}

// aggregateCollection is the collection an aggregate reads; {aggregate:
// 1} is for pipelines that start with a stage reading no collection
// ($documents, $currentOp), run by aggregateSource.
func aggregateCollection(req *Request) (string, error) {
	if _, ok := req.Cmd[0].Value.(string); ok {
		return collectionName(req)
	}
	if n, ok := asNumber(req.Cmd[0].Value); ok && n == 1 {
		first := "an empty pipeline"
		if p, _ := getArray(req.Cmd, "pipeline"); len(p) > 0 {
			if st, ok := p[0].(bson.D); ok && len(st) > 0 {
				first = "'" + st[0].Key + "'"
			}
		}
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for %s; a collection is required.", first)
	}
	return collectionName(req)
}
