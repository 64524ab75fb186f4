package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Filter is a parsed and validated query filter.
type Filter struct {
	// raw is the filter as given; SQL and Equalities read its top level,
	// which parsing has already validated.
	raw  bson.D
	root docExpr
	// exprErr is the first error an $expr met while matching (a Filter
	// serves one request at a time); MatchErr reports and clears it.
	exprErr error
}

// ParseFilter parses a query filter. Invalid filters fail with BadValue and
// MongoDB's messages (e.g. "unknown operator: $foo"); operators tierdb does
// not implement ($where, $text, geo operators, ...) fail with
// NotImplemented. An empty filter matches every document.
func ParseFilter(filter bson.D) (*Filter, error) {
	return ParseFilterVars(filter, nil)
}

// ParseFilterVars is ParseFilter with variables ($$name) that $expr
// clauses may read, such as $lookup's let.
func ParseFilterVars(filter bson.D, vars map[string]any) (*Filter, error) {
	f := &Filter{raw: filter}
	root, err := parseDoc(filter, &parseCtx{filter: f, vars: vars})
	if err != nil {
		return nil, err
	}
	f.root = root
	return f, nil
}

// Match reports whether doc matches the filter, with MongoDB's semantics.
// It is the reference: storage's SQL prefilter only narrows the candidates.
// An $expr that fails to evaluate does not match; MatchErr reports why.
func (f *Filter) Match(doc bson.D) bool {
	return f.root.matchDoc(doc)
}

// MatchErr is Match that also returns the error an $expr clause met (a
// $divide by zero, a type error), which fails the whole query in MongoDB.
func (f *Filter) MatchErr(doc bson.D) (bool, error) {
	ok := f.root.matchDoc(doc)
	if err := f.exprErr; err != nil {
		f.exprErr = nil
		return false, err
	}
	return ok, nil
}

// Equalities returns the field-value pairs that every matching document must
// have, as MongoDB uses them to seed the document an upsert inserts: each
// top-level field given a plain value or {$eq: value}, also inside top-level
// $and (and a one-clause $or). Dotted paths stay dotted keys; regexes and
// operator documents are left out; the first pair for a path wins.
func (f *Filter) Equalities() bson.D {
	var out bson.D
	seen := map[string]bool{}
	collectEqualities(f.raw, &out, seen)
	return out
}

func collectEqualities(filter bson.D, out *bson.D, seen map[string]bool) {
	for _, e := range filter {
		switch e.Key {
		case "$and":
			a, _ := asArray(normalize(e.Value))
			for _, c := range a {
				if d, ok := asDoc(normalize(c)); ok {
					collectEqualities(d, out, seen)
				}
			}
			continue
		case "$or":
			a, _ := asArray(normalize(e.Value))
			if len(a) == 1 {
				if d, ok := asDoc(normalize(a[0])); ok {
					collectEqualities(d, out, seen)
				}
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") || seen[e.Key] {
			continue
		}
		v, ok := equalityValue(e.Value)
		if !ok {
			continue
		}
		seen[e.Key] = true
		*out = append(*out, bson.E{Key: e.Key, Value: v})
	}
}

// equalityValue is the value a filter field's condition pins the field to,
// if it is a plain equality.
func equalityValue(cond any) (any, bool) {
	n := normalize(cond)
	if _, ok := n.(bson.Regex); ok {
		return nil, false
	}
	ops, isOps := operatorDoc(n)
	if !isOps {
		return cond, true
	}
	for _, op := range ops {
		if op.Key == "$eq" {
			if _, nested := operatorDoc(normalize(op.Value)); nested {
				return nil, false
			}
			return op.Value, true
		}
	}
	return nil, false
}

// operatorDoc reports whether v is a document of operators ({$gt: 1}) rather
// than a value to compare with: its first field starts with '$', and it is
// not a DBRef ({$ref: ..., $id: ...}), which is a plain value.
func operatorDoc(v any) (bson.D, bool) {
	d, ok := asDoc(v)
	if !ok || len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
		return nil, false
	}
	switch d[0].Key {
	case "$ref", "$id", "$db":
		return nil, false
	}
	return d, true
}
