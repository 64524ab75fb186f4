package exec

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The shaping stages: $project (inclusion with computed fields, or
// exclusion), $unset (exclusion), $addFields/$set (computed fields on the
// whole document) and $replaceRoot/$replaceWith.

// projNode is one level of a projection: its fields in spec order.
type projNode struct {
	fields []*projField
	byName map[string]*projField
}

type projField struct {
	name    string
	include bool      // inclusion (or, in an exclusion projection, exclusion)
	expr    expr.Expr // a computed field
	sub     *projNode // a nested projection ("a.b" or {a: {b: ...}})
}

func newProjNode() *projNode { return &projNode{byName: map[string]*projField{}} }

// child returns the field name of n, creating it; a field that is already
// a leaf (or a subtree, when leaf) is a path collision.
func (n *projNode) child(name, path string, leaf bool) (*projField, error) {
	f := n.byName[name]
	if f == nil {
		f = &projField{name: name}
		n.byName[name] = f
		n.fields = append(n.fields, f)
		return f, nil
	}
	if leaf || f.sub == nil {
		return nil, mongoerr.Newf(mongoerr.Location31250, "Invalid projection :: caused by :: Path collision at %s", path)
	}
	return f, nil
}

// hasComputed reports whether n computes a field somewhere.
func (n *projNode) hasComputed() bool {
	for _, f := range n.fields {
		if f.expr != nil || (f.sub != nil && f.sub.hasComputed()) {
			return true
		}
	}
	return false
}

// projection is a parsed $project or $unset.
type projection struct {
	exclude bool
	root    *projNode
	ev      *evaluator
	// metas are the top-level {field: {$meta: "textScore"}}, which do
	// not make a projection an inclusion (MongoDB's rule): in an
	// exclusion they are set after the exclusion.
	metas []metaField
}

// metaField is a top-level {name: {$meta: ...}}; at is its place among
// the root's fields.
type metaField struct {
	name string
	e    expr.Expr
	at   int
}

func parseProjectStage(name string, arg any, env *Env) (*projection, error) {
	if name == "$unset" {
		var fields []string
		switch x := arg.(type) {
		case string:
			fields = []string{x}
		case bson.A:
			for _, f := range x {
				s, ok := f.(string)
				if !ok {
					return nil, mongoerr.New(mongoerr.Location31120, "$unset specification must be a string or an array containing only string values")
				}
				fields = append(fields, s)
			}
		default:
			return nil, mongoerr.New(mongoerr.Location31002, "$unset specification must be a string or an array")
		}
		if len(fields) == 0 {
			return nil, mongoerr.New(mongoerr.Location31119, "$unset specification must be a string or an array with at least one field")
		}
		spec := bson.D{}
		for _, f := range fields {
			spec = append(spec, bson.E{Key: f, Value: int32(0)})
		}
		return parseProjection(spec, env)
	}
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location15969, "$project specification must be an object")
	}
	return parseProjection(d, env)
}

func parseProjection(spec bson.D, env *Env) (*projection, error) {
	if len(spec) == 0 {
		return nil, mongoerr.New(mongoerr.Location51272, "Invalid $project :: caused by :: projection specification must have at least one field")
	}
	p := &projection{root: newProjNode(), ev: newEvaluator(env)}
	scope := env.scope()
	mode := 0 // 1 inclusion, -1 exclusion
	idExcluded, idIncluded := false, false
	var walk func(n *projNode, prefix string, spec bson.D) error
	walk = func(n *projNode, prefix string, spec bson.D) error {
		for _, e := range spec {
			path := prefix + e.Key
			parts := strings.Split(e.Key, ".")
			for _, part := range parts {
				if part == "" {
					return mongoerr.Newf(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
				}
				if strings.HasPrefix(part, "$") {
					return mongoerr.Newf(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
				}
			}
			// Walk down a dotted key.
			node := n
			for _, part := range parts[:len(parts)-1] {
				f, err := node.child(part, path, false)
				if err != nil {
					return err
				}
				if f.sub == nil {
					f.sub = newProjNode()
				}
				node = f.sub
			}
			last := parts[len(parts)-1]
			isID := prefix == "" && path == "_id"
			switch v := e.Value.(type) {
			case bool, int32, int64, float64, bson.Decimal128:
				on := expr.Truthy(v)
				if isID {
					idExcluded, idIncluded = !on, on
					continue
				}
				want := 1
				if !on {
					want = -1
				}
				if mode != 0 && mode != want {
					if want == 1 {
						return mongoerr.Newf(mongoerr.Location31253, "Invalid $project :: caused by :: Cannot do inclusion on field %s in exclusion projection", path)
					}
					return mongoerr.Newf(mongoerr.Location31254, "Invalid $project :: caused by :: Cannot do exclusion on field %s in inclusion projection", path)
				}
				mode = want
				f, err := node.child(last, path, true)
				if err != nil {
					return err
				}
				f.include = true
			case bson.D:
				if len(v) == 0 {
					return mongoerr.Newf(mongoerr.Location51270, "Invalid $project :: caused by :: An empty sub-projection is not a valid value. Found empty object at path %s", path)
				}
				if prefix == "" && len(parts) == 1 && len(v) == 1 && v[0].Key == "$meta" {
					x, err := expr.Parse(v, scope)
					if err != nil {
						return err
					}
					if n.byName[last] != nil || p.hasMeta(last) {
						return mongoerr.Newf(mongoerr.Location31250, "Invalid projection :: caused by :: Path collision at %s", path)
					}
					p.metas = append(p.metas, metaField{name: last, e: x, at: len(n.fields)})
					continue
				}
				if !strings.HasPrefix(v[0].Key, "$") {
					f, err := node.child(last, path, false)
					if err != nil {
						return err
					}
					if f.sub == nil {
						f.sub = newProjNode()
					}
					if err := walk(f.sub, path+".", v); err != nil {
						return err
					}
					continue
				}
				if err := p.computed(node, last, path, v, scope, &mode); err != nil {
					return err
				}
			default:
				if err := p.computed(node, last, path, v, scope, &mode); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(p.root, "", spec); err != nil {
		return nil, err
	}
	p.exclude = mode == -1 || (mode == 0 && (idExcluded || len(p.metas) > 0 && !idIncluded))
	if !p.exclude {
		p.metasComputed()
	}
	if p.exclude && idExcluded {
		f, _ := p.root.child("_id", "_id", true)
		if f != nil {
			f.include = true
		}
	}
	if !p.exclude && !idExcluded && p.root.byName["_id"] == nil {
		p.root.fields = append([]*projField{{name: "_id", include: true}}, p.root.fields...)
		p.root.byName["_id"] = p.root.fields[0]
	}
	return p, nil
}

func (p *projection) computed(n *projNode, name, path string, v any, scope *expr.Scope, mode *int) error {
	if *mode == -1 {
		return mongoerr.New(mongoerr.Location31252, "Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion projection")
	}
	*mode = 1
	e, err := expr.Parse(v, scope)
	if err != nil {
		return err
	}
	f, err := n.child(name, path, true)
	if err != nil {
		return err
	}
	f.expr = e
	return nil
}

// hasMeta reports whether name is already a top-level $meta field.
func (p *projection) hasMeta(name string) bool {
	for _, m := range p.metas {
		if m.name == name {
			return true
		}
	}
	return false
}

// metasComputed makes the $meta fields of an inclusion computed fields,
// in their places.
func (p *projection) metasComputed() {
	for k, m := range p.metas {
		f := &projField{name: m.name, expr: m.e}
		p.root.byName[m.name] = f
		at := m.at + k
		p.root.fields = append(p.root.fields[:at], append([]*projField{f}, p.root.fields[at:]...)...)
	}
	p.metas = nil
}

func (p *projection) apply(doc bson.D) (bson.D, error) {
	if p.exclude {
		out := excludeDoc(p.root, doc)
		for _, m := range p.metas {
			v, err := p.ev.eval(m.e, doc)
			if err != nil {
				return nil, err
			}
			out = setField(out, m.name, v)
		}
		return out, nil
	}
	out, err := p.include(p.root, doc, doc)
	return out, err
}

// include applies an inclusion node to d: included fields in the
// document's order, then computed fields in the spec's order.
func (p *projection) include(n *projNode, d bson.D, root bson.D) (bson.D, error) {
	out := bson.D{}
	for _, e := range d {
		f := n.byName[e.Key]
		if f == nil || f.expr != nil {
			continue
		}
		if f.include {
			out = append(out, e)
			continue
		}
		v, keep, err := p.includeValue(f.sub, e.Value, root)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, bson.E{Key: e.Key, Value: v})
		}
	}
	for _, f := range n.fields {
		switch {
		case f.expr != nil:
			v, err := p.ev.eval(f.expr, root)
			if err != nil {
				return nil, err
			}
			if !expr.IsMissing(v) {
				out = setField(out, f.name, v)
			}
		case f.sub != nil && f.sub.hasComputed():
			if _, present := lookup(d, f.name); !present {
				v, err := p.include(f.sub, bson.D{}, root)
				if err != nil {
					return nil, err
				}
				out = append(out, bson.E{Key: f.name, Value: v})
			}
		}
	}
	return out, nil
}

// includeValue applies a nested inclusion to a value: documents are
// projected, arrays element by element; other values are dropped, or
// replaced by the computed fields when the subtree computes some.
func (p *projection) includeValue(n *projNode, v any, root bson.D) (any, bool, error) {
	switch x := v.(type) {
	case bson.D:
		out, err := p.include(n, x, root)
		return out, err == nil, err
	case bson.A:
		out := bson.A{}
		for _, e := range x {
			r, keep, err := p.includeValue(n, e, root)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, r)
			}
		}
		return out, true, nil
	}
	if n.hasComputed() {
		out, err := p.include(n, bson.D{}, root)
		return out, err == nil, err
	}
	return nil, false, nil
}

// excludeDoc removes the fields of an exclusion node from d, through
// arrays.
func excludeDoc(n *projNode, d bson.D) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		f := n.byName[e.Key]
		switch {
		case f == nil:
			out = append(out, e)
		case f.include:
		default:
			out = append(out, bson.E{Key: e.Key, Value: excludeValue(f.sub, e.Value)})
		}
	}
	return out
}

func excludeValue(n *projNode, v any) any {
	switch x := v.(type) {
	case bson.D:
		return excludeDoc(n, x)
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = excludeValue(n, e)
		}
		return out
	}
	return v
}

// setField sets name in d, in place if present, else at the end.
func setField(d bson.D, name string, v any) bson.D {
	for i := range d {
		if d[i].Key == name {
			d[i].Value = v
			return d
		}
	}
	return append(d, bson.E{Key: name, Value: v})
}

// addFields is a parsed $addFields/$set: paths and their expressions.
type addFields struct {
	paths [][]string
	exprs []expr.Expr
	ev    *evaluator
}

func parseAddFields(name string, arg any, env *Env) (*addFields, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40272, "%s specification stage must be an object, got %s", name, query.TypeName(arg))
	}
	if len(d) == 0 {
		return nil, mongoerr.Newf(mongoerr.Location40177, "Invalid %s :: caused by :: specification must have at least one field", name)
	}
	a := &addFields{ev: newEvaluator(env)}
	scope := env.scope()
	var seen []string
	for _, e := range d {
		parts := strings.Split(e.Key, ".")
		for _, part := range parts {
			if part == "" {
				return nil, mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
			}
			if strings.HasPrefix(part, "$") {
				return nil, mongoerr.Newf(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
			}
		}
		for _, s := range seen {
			if s == e.Key || strings.HasPrefix(s, e.Key+".") || strings.HasPrefix(e.Key, s+".") {
				return nil, mongoerr.Newf(mongoerr.Location31250, "Invalid %s :: caused by :: Path collision at %s", name, e.Key)
			}
		}
		seen = append(seen, e.Key)
		x, err := expr.Parse(e.Value, scope)
		if err != nil {
			return nil, err
		}
		a.paths = append(a.paths, parts)
		a.exprs = append(a.exprs, x)
	}
	return a, nil
}

// apply sets every path to its expression's value (computed on the input
// document); a missing value ($$REMOVE) removes the field.
func (a *addFields) apply(doc bson.D) (bson.D, error) {
	vals := make([]any, len(a.exprs))
	for i, e := range a.exprs {
		v, err := a.ev.eval(e, doc)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	out := append(bson.D(nil), doc...)
	for i, parts := range a.paths {
		out = setPath(out, parts, vals[i])
	}
	return out, nil
}

// setPath returns d with parts set to v, copying what it changes: through
// documents, and through arrays element by element (a non-document
// element or value on the way is replaced by a new document).
func setPath(d bson.D, parts []string, v any) bson.D {
	if len(parts) == 1 {
		if expr.IsMissing(v) {
			out := make(bson.D, 0, len(d))
			for _, e := range d {
				if e.Key != parts[0] {
					out = append(out, e)
				}
			}
			return out
		}
		return setField(append(bson.D(nil), d...), parts[0], v)
	}
	cur, _ := lookup(d, parts[0])
	return setField(append(bson.D(nil), d...), parts[0], setPathValue(cur, parts[1:], v))
}

func setPathValue(cur any, parts []string, v any) any {
	switch x := cur.(type) {
	case bson.D:
		return setPath(x, parts, v)
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = setPathValue(e, parts, v)
		}
		return out
	}
	return setPath(bson.D{}, parts, v)
}

type replaceRoot struct {
	next Stage
	e    expr.Expr
	ev   *evaluator
}

func newReplaceRoot(name string, arg any, next Stage, env *Env) (Stage, error) {
	root := arg
	if name == "$replaceRoot" {
		d, ok := arg.(bson.D)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location40229, "expected an object as specification for $replaceRoot stage, got %s", query.TypeName(arg))
		}
		found := false
		for _, e := range d {
			if e.Key != "newRoot" {
				return nil, mongoerr.Newf(mongoerr.Location40230, "unrecognized option to $replaceRoot stage: %s, only valid option is 'newRoot'.", e.Key)
			}
			root, found = e.Value, true
		}
		if !found {
			return nil, mongoerr.New(mongoerr.Location40231, "no newRoot specified for the $replaceRoot stage")
		}
	}
	e, err := expr.Parse(root, env.scope())
	if err != nil {
		return nil, err
	}
	return &replaceRoot{next: next, e: e, ev: newEvaluator(env)}, nil
}

func (r *replaceRoot) Push(doc bson.D) error {
	v, err := r.ev.eval(r.e, doc)
	if err != nil {
		return err
	}
	d, ok := v.(bson.D)
	if !ok {
		return mongoerr.Newf(mongoerr.Location40228, "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.", expr.FormatValue(v), expr.TypeName(v))
	}
	return r.next.Push(d)
}

func (r *replaceRoot) Finish() error { return r.next.Finish() }

func sortDocs(docs []bson.D, s query.Sort) {
	sort.SliceStable(docs, func(i, j int) bool { return s.Compare(docs[i], docs[j]) < 0 })
}
