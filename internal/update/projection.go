package update

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Projection is a parsed find projection. It is immutable and safe for
// concurrent use.
type Projection struct {
	// inclusion: only the listed paths are returned (plus _id unless
	// excluded); otherwise everything but the excluded paths is.
	inclusion bool
	root      *projNode
	// positional is the path of a positional projection ("a.b.$" names
	// a.b), nil when there is none; filter is the query it reads the
	// matched array position from.
	positional []string
	filter     *query.Filter
	// elemMatch are the top-level fields projected with $elemMatch, in
	// the projection's order: MongoDB returns them after the other
	// fields (since 4.4), whatever their place in the document.
	elemMatch []string
}

type projAction int

const (
	actNone projAction = iota // interior node: only its children act
	actInclude
	actExclude
	actSlice
	actElemMatch
)

// projNode is one field of the projection tree.
type projNode struct {
	children map[string]*projNode
	action   projAction
	// skip and limit are the $slice window; skip is nil for the
	// single-number form.
	skip      *int64
	limit     int64
	elemMatch func(elem any) bool
}

// ParseProjection parses a find projection: inclusion ({a: 1}) or
// exclusion ({a: 0}), with _id included unless {_id: 0}; dotted paths and
// embedded specs ({a: {b: 1}}); the $slice and $elemMatch operators; and
// the positional form {"a.$": 1}, which returns the element of a that
// filter (the query; nil when there is none) matched. Aggregation
// expressions are not supported.
func ParseProjection(spec bson.D, filter *query.Filter) (*Projection, error) {
	p := &Projection{root: &projNode{}, filter: filter}
	hasElemMatch := false
	type mode int
	const (
		undecided mode = iota
		including
		excluding
	)
	m, idIncluded := undecided, false
	var walk func(prefix string, spec bson.D) error
	walk = func(prefix string, spec bson.D) error {
		for _, e := range spec {
			path := prefix + e.Key
			if at, end, ok := positionalAt(e.Key); ok && (isInclusionValue(e.Value) || !isInclusionType(e.Value)) {
				if err := p.parsePositional(path, prefix, e, at, end, hasElemMatch); err != nil {
					return err
				}
				if m == excluding {
					return mongoerr.Newf(codeProjectionInclusionInExclusion,
						"Cannot do inclusion on field %s in exclusion projection", path)
				}
				m = including
				if err := p.root.insert(p.positional, &projNode{action: actInclude}); err != nil {
					return err
				}
				continue
			}
			parts, err := splitProjectionPath(path, e.Key)
			if err != nil {
				return err
			}
			n := &projNode{}
			switch v := e.Value.(type) {
			case bool, int32, int64, float64, bson.Decimal128:
				n.action = actExclude
				if truthy(v) {
					n.action = actInclude
				}
			case bson.D:
				if len(v) == 0 {
					return mongoerr.Newf(mongoerr.FailedToParse,
						"An empty sub-projection is not a valid value. Found empty object at path %s", path)
				}
				if !strings.HasPrefix(v[0].Key, "$") {
					if err := walk(path+".", v); err != nil {
						return err
					}
					continue
				}
				if err := parseProjectionOperator(n, path, parts, v, p.positional != nil); err != nil {
					return err
				}
				if n.action == actElemMatch {
					hasElemMatch = true
					p.elemMatch = append(p.elemMatch, path)
				}
			default:
				return mongoerr.Newf(mongoerr.NotImplemented,
					"projection values of type %s (expressions and literals) are not supported: %s", query.TypeName(v), path)
			}

			isID := path == "_id"
			switch {
			case isID && n.action == actInclude:
				idIncluded = true
			case isID && n.action == actExclude:
			case n.action == actInclude || n.action == actElemMatch:
				if m == excluding {
					return mongoerr.Newf(codeProjectionInclusionInExclusion,
						"Cannot do inclusion on field %s in exclusion projection", path)
				}
				m = including
			case n.action == actExclude:
				if m == including {
					return mongoerr.Newf(codeProjectionExclusionInInclusion,
						"Cannot do exclusion on field %s in inclusion projection", path)
				}
				m = excluding
			}
			if err := p.root.insert(parts, n); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", spec); err != nil {
		return nil, err
	}
	// With only _id and $slice fields MongoDB decides by _id: {_id: 1}
	// alone returns just the _id.
	p.inclusion = m == including || (m == undecided && idIncluded)
	return p, nil
}

func truthy(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	return numberAsFloat(v) != 0
}

func splitProjectionPath(path, key string) ([]string, error) {
	if key == "" {
		return nil, mongoerr.New(mongoerr.Code(40352), "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(path, ".") {
		return nil, mongoerr.New(mongoerr.Code(40353), "FieldPath must not end with a '.'.")
	}
	parts := strings.Split(path, ".")
	for _, c := range parts {
		switch {
		case c == "":
			return nil, mongoerr.New(mongoerr.Code(15998), "FieldPath field names may not be empty strings.")
		case c[0] == '$':
			return nil, mongoerr.Newf(mongoerr.Code(16410),
				"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

func parseProjectionOperator(n *projNode, path string, parts []string, v bson.D, hasPositional bool) error {
	if len(v) != 1 {
		return mongoerr.Newf(mongoerr.BadValue,
			"projection operator object for %s must have exactly one field: %s", path, formatValue(v))
	}
	switch op, arg := v[0].Key, v[0].Value; op {
	case "$slice":
		n.action = actSlice
		if isNumber(arg) {
			// MongoDB reads the number as an int, truncating.
			n.limit = sliceInt(arg)
			return nil
		}
		a, ok := arg.(bson.A)
		if !ok {
			return mongoerr.New(mongoerr.Code(31273), "$slice only supports numbers and [skip, limit] arrays")
		}
		if len(a) != 2 {
			return mongoerr.New(mongoerr.Code(31272), "$slice array argument should be of form [skip, limit]")
		}
		if !isNumber(a[0]) {
			if s, ok := a[0].(string); ok && strings.HasPrefix(s, "$") {
				return mongoerr.Newf(mongoerr.NotImplemented,
					"projection expressions (the $slice expression) are not supported: %s", path)
			}
			return mongoerr.Newf(mongoerr.Code(31257), "$slice expects the skip argument to be a number, got %s", query.TypeName(a[0]))
		}
		if !isNumber(a[1]) {
			return mongoerr.Newf(mongoerr.Code(31258), "$slice expects the limit argument to be a number, got %s", query.TypeName(a[1]))
		}
		skip, lim := sliceInt(a[0]), sliceInt(a[1])
		if lim <= 0 {
			return mongoerr.Newf(mongoerr.Code(31259), "$slice limit must be positive, got %d", lim)
		}
		n.skip, n.limit = &skip, lim
		return nil
	case "$elemMatch":
		spec, ok := arg.(bson.D)
		if !ok {
			return mongoerr.Newf(mongoerr.Code(31274), "elemMatch: Invalid argument, object required, but got %s", query.TypeName(arg))
		}
		if hasPositional {
			return mongoerr.New(mongoerr.Code(31255), "Cannot specify positional operator and $elemMatch.")
		}
		if len(parts) > 1 {
			return mongoerr.New(mongoerr.Code(31275), "Cannot use $elemMatch projection on a nested field.")
		}
		match, err := elemMatchMatcher(spec)
		if err != nil {
			return err
		}
		n.action, n.elemMatch = actElemMatch, match
		return nil
	default:
		return mongoerr.Newf(mongoerr.NotImplemented, "projection operator %s is not supported", op)
	}
}

// insert adds n at parts, refusing a path that is, or lies inside or
// above, one already specified.
func (t *projNode) insert(parts []string, n *projNode) error {
	cur := t
	for i, p := range parts {
		if cur.children == nil {
			cur.children = map[string]*projNode{}
		}
		child := cur.children[p]
		last := i == len(parts)-1
		switch {
		case child == nil && last:
			cur.children[p] = n
			return nil
		case child == nil:
			child = &projNode{}
			cur.children[p] = child
		case last || child.action != actNone:
			if child.action != actNone && !last {
				return mongoerr.Newf(codeProjectionPathCollisionSub,
					"Path collision at %s remaining portion %s",
					strings.Join(parts, "."), strings.Join(parts[i+1:], "."))
			}
			return mongoerr.Newf(codeProjectionPathCollision,
				"Path collision at %s", strings.Join(parts[:i+1], "."))
		}
		cur = child
	}
	return nil
}

// Apply returns the projection of doc. doc is not modified. Only a
// positional projection can fail: when the query recorded no matched
// position for an array on its path (51246), or one past the projected
// array's end (51247).
func (p *Projection) Apply(doc bson.D) (bson.D, error) {
	if !p.inclusion {
		return p.root.excludeDoc(doc), nil
	}
	out := p.root.includeDoc(doc, true)
	for _, name := range p.elemMatch {
		if j := fieldIndex(doc, name); j >= 0 {
			if v, ok := p.root.children[name].applyElemMatch(doc[j].Value); ok {
				out = append(out, bson.E{Key: name, Value: v})
			}
		}
	}
	if p.positional == nil {
		return out, nil
	}
	return p.applyPositional(doc, out)
}

// includeDoc keeps the fields of d that the tree names. At the top level
// _id is kept unless explicitly excluded.
func (t *projNode) includeDoc(d bson.D, top bool) bson.D {
	out := bson.D{}
	for _, e := range d {
		child := t.children[e.Key]
		if child == nil {
			if top && e.Key == "_id" {
				out = append(out, bson.E{Key: e.Key, Value: deepCopy(e.Value)})
			}
			continue
		}
		if top && child.action == actElemMatch {
			continue // appended by Apply, after the other fields
		}
		if v, ok := child.include(e.Value); ok {
			out = append(out, bson.E{Key: e.Key, Value: v})
		}
	}
	return out
}

// include projects one value under an inclusion projection.
func (t *projNode) include(v any) (any, bool) {
	switch t.action {
	case actInclude:
		return deepCopy(v), true
	case actExclude:
		return nil, false // only a top-level {_id: 0} gets here
	case actSlice:
		return t.applySlice(v), true
	case actElemMatch:
		return t.applyElemMatch(v)
	}
	switch x := v.(type) {
	case bson.D:
		return t.includeDoc(x, false), true
	case bson.A:
		// Paths reach into arrays of documents element by element;
		// elements that cannot contain the path are dropped.
		out := bson.A{}
		for _, e := range x {
			switch e.(type) {
			case bson.D, bson.A:
				if pv, ok := t.include(e); ok {
					out = append(out, pv)
				}
			}
		}
		return out, true
	}
	return nil, false
}

// excludeDoc removes the fields of d that the tree excludes.
func (t *projNode) excludeDoc(d bson.D) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		child := t.children[e.Key]
		if child == nil {
			out = append(out, bson.E{Key: e.Key, Value: deepCopy(e.Value)})
			continue
		}
		if v, ok := child.exclude(e.Value); ok {
			out = append(out, bson.E{Key: e.Key, Value: v})
		}
	}
	return out
}

// exclude projects one value under an exclusion projection.
func (t *projNode) exclude(v any) (any, bool) {
	switch t.action {
	case actExclude:
		return nil, false
	case actInclude:
		return deepCopy(v), true // only a top-level {_id: 1} gets here
	case actSlice:
		return t.applySlice(v), true
	case actElemMatch:
		return t.applyElemMatch(v)
	}
	switch x := v.(type) {
	case bson.D:
		return t.excludeDoc(x), true
	case bson.A:
		out := make(bson.A, 0, len(x))
		for _, e := range x {
			switch e.(type) {
			case bson.D, bson.A:
				if pv, ok := t.exclude(e); ok {
					out = append(out, pv)
				}
			default:
				out = append(out, e)
			}
		}
		return out, true
	}
	return v, true
}

// applySlice trims an array to the $slice window; other values pass.
func (t *projNode) applySlice(v any) any {
	a, ok := v.(bson.A)
	if !ok {
		return deepCopy(v)
	}
	n := int64(len(a))
	var from, to int64
	switch {
	case t.skip != nil:
		from = *t.skip
		if from < 0 {
			from = max(n+from, 0)
		}
		from = min(from, n)
		to = min(from+t.limit, n)
	case t.limit >= 0:
		from, to = 0, min(t.limit, n)
	default:
		from, to = max(n+t.limit, 0), n
	}
	return deepCopy(a[from:to])
}

// applyElemMatch keeps the first matching element of an array, or drops
// the field when there is none.
func (t *projNode) applyElemMatch(v any) (any, bool) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, false
	}
	for _, e := range a {
		if t.elemMatch(e) {
			return bson.A{deepCopy(e)}, true
		}
	}
	return nil, false
}
