package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Expr is a parsed expression.
type Expr interface {
	Eval(c *Ctx) (any, error)
}

// Ctx is what an evaluation sees: the document ($$ROOT and $$CURRENT),
// $$NOW, the variables defined outside the expression (a $lookup's let)
// and the local ones $let, $map, $filter and $reduce bind. One Ctx serves
// one goroutine.
type Ctx struct {
	root    bson.D
	current any
	now     bson.DateTime
	vars    map[string]any
	locals  []any
}

// NewCtx returns a context for evaluating against doc.
func NewCtx(doc bson.D, vars map[string]any, now bson.DateTime) *Ctx {
	return &Ctx{root: doc, current: doc, vars: vars, now: now}
}

// Reset points c at another document.
func (c *Ctx) Reset(doc bson.D) {
	c.root, c.current = doc, doc
}

func (c *Ctx) setLocal(slot int, v any) {
	for len(c.locals) <= slot {
		c.locals = append(c.locals, nil)
	}
	c.locals[slot] = v
}

// Scope is what parsing knows: the names of variables defined outside
// the expression, and the local ones bound around the part being parsed.
type Scope struct {
	globals map[string]any
	local   *binding
	slots   *int
	// system are upper-case variables a stage defines ($redact's).
	system map[string]bool
	// meta is where {$meta: "textScore"} reads the score; nil: not
	// available, noMeta says why (nil: no $text query, meta.go).
	meta   *Meta
	noMeta error
}

type binding struct {
	name   string
	slot   int
	parent *binding
}

// NewScope returns a scope whose outer variables are the keys of vars.
func NewScope(vars map[string]any) *Scope {
	return &Scope{globals: vars, slots: new(int)}
}

// bind returns a scope where name is a new local variable, and its slot.
func (s *Scope) bind(name string) (*Scope, int) {
	slot := *s.slots
	*s.slots++
	c := *s
	c.local = &binding{name: name, slot: slot, parent: s.local}
	return &c, slot
}

// Parse parses an expression in scope s.
func Parse(v any, s *Scope) (Expr, error) {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "$") {
			return parsePath(x, s)
		}
	case bson.D:
		return parseObject(x, s)
	case bson.A:
		items := make([]Expr, len(x))
		for i, e := range x {
			p, err := Parse(e, s)
			if err != nil {
				return nil, err
			}
			items[i] = p
		}
		return arrayExpr(items), nil
	}
	return constant{v}, nil
}

type constant struct{ v any }

func (k constant) Eval(*Ctx) (any, error) { return k.v, nil }

// arrayExpr is an array of expressions; a missing element becomes null.
type arrayExpr []Expr

func (a arrayExpr) Eval(c *Ctx) (any, error) {
	out := make(bson.A, len(a))
	for i, e := range a {
		v, err := e.Eval(c)
		if err != nil {
			return nil, err
		}
		if IsMissing(v) {
			v = nil
		}
		out[i] = v
	}
	return out, nil
}

// objectExpr is a document of expressions; missing values are left out.
type objectExpr struct {
	keys  []string
	exprs []Expr
}

func (o objectExpr) Eval(c *Ctx) (any, error) {
	out := make(bson.D, 0, len(o.keys))
	for i, e := range o.exprs {
		v, err := e.Eval(c)
		if err != nil {
			return nil, err
		}
		if !IsMissing(v) {
			out = append(out, bson.E{Key: o.keys[i], Value: v})
		}
	}
	return out, nil
}

func parseObject(d bson.D, s *Scope) (Expr, error) {
	if len(d) > 0 && strings.HasPrefix(d[0].Key, "$") {
		if len(d) != 1 {
			return nil, mongoerr.Newf(mongoerr.Location15983, "An object representing an expression must have exactly one field: %s", formatDoc(d))
		}
		return parseOperator(d[0].Key, d[0].Value, s)
	}
	o := objectExpr{}
	seen := map[string]bool{}
	for _, e := range d {
		if err := checkFieldName(e.Key); err != nil {
			return nil, err
		}
		if seen[e.Key] {
			return nil, mongoerr.Newf(mongoerr.Location16406, "duplicate field name specified in object literal: %s", formatDoc(d))
		}
		seen[e.Key] = true
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		o.keys = append(o.keys, e.Key)
		o.exprs = append(o.exprs, x)
	}
	return o, nil
}

// checkFieldName applies MongoDB's rules for a field name in an
// expression's document or a field path.
func checkFieldName(name string) error {
	switch {
	case name == "":
		return mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
	case strings.HasPrefix(name, "$"):
		return mongoerr.New(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	case strings.Contains(name, "."):
		return mongoerr.New(mongoerr.Location16412, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")
	case strings.IndexByte(name, 0) >= 0:
		return mongoerr.New(mongoerr.Location16411, "FieldPath field names may not contain '\\0'.")
	}
	return nil
}

// pathExpr reads a path from the current document ("$a.b") or from a
// variable ("$$v.a.b").
type pathExpr struct {
	source int
	name   string
	slot   int
	parts  []string
}

const (
	srcCurrent = iota
	srcRoot
	srcNow
	srcRemove
	srcGlobal
	srcLocal
)

func parsePath(raw string, s *Scope) (Expr, error) {
	if raw == "$" {
		return nil, mongoerr.New(mongoerr.Location16872, "'$' by itself is not a valid FieldPath")
	}
	p := &pathExpr{}
	rest := raw[1:]
	if strings.HasPrefix(raw, "$$") {
		name, tail, dotted := strings.Cut(raw[2:], ".")
		rest = tail
		if dotted && tail == "" {
			return nil, mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
		}
		if err := resolveVar(p, name, s); err != nil {
			return nil, err
		}
	}
	if rest != "" {
		p.parts = strings.Split(rest, ".")
		for _, part := range p.parts {
			if err := checkFieldName(part); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func resolveVar(p *pathExpr, name string, s *Scope) error {
	p.name = name
	for b := s.local; b != nil; b = b.parent {
		if b.name == name {
			p.source, p.slot = srcLocal, b.slot
			return nil
		}
	}
	switch name {
	case "CURRENT":
		p.source = srcCurrent
		return nil
	case "ROOT":
		p.source = srcRoot
		return nil
	case "NOW":
		p.source = srcNow
		return nil
	case "REMOVE":
		p.source = srcRemove
		return nil
	case "CLUSTER_TIME":
		// As a MongoDB server without cluster time (a standalone):
		// tierdb keeps none.
		return mongoerr.New(mongoerr.Code(51144), "Builtin variable '$$CLUSTER_TIME' is not available")
	case "SEARCH_META", "USER_ROLES":
		return mongoerr.Newf(mongoerr.InvalidPipelineOperator, "the variable $$%s is not supported by tierdb", name)
	}
	if s.system[name] {
		p.source = srcGlobal
		return nil
	}
	if err := checkVarName(name); err != nil {
		return err
	}
	if _, ok := s.globals[name]; ok {
		p.source = srcGlobal
		return nil
	}
	return mongoerr.Newf(mongoerr.Location17276, "Use of undefined variable: %s", name)
}

// checkVarName applies MongoDB's rules for user variable names: a
// lowercase letter or non-ASCII character first, then letters, digits,
// '_' and non-ASCII characters.
func checkVarName(name string) error {
	if name == "" {
		return mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
	}
	for i, r := range name {
		ok := r >= 0x80 || (r >= 'a' && r <= 'z')
		if i > 0 {
			ok = ok || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_'
		}
		if !ok {
			if i == 0 {
				return mongoerr.Newf(mongoerr.FailedToParse, "'%s' starts with an invalid character for a user variable name", name)
			}
			return mongoerr.Newf(mongoerr.FailedToParse, "'%s' contains an invalid character for a variable name: '%c'", name, r)
		}
	}
	return nil
}

func (p *pathExpr) Eval(c *Ctx) (any, error) {
	var v any
	switch p.source {
	case srcCurrent:
		v = c.current
	case srcRoot:
		v = c.root
	case srcNow:
		v = c.now
	case srcRemove:
		return Missing, nil
	case srcGlobal:
		v = c.vars[p.name]
	case srcLocal:
		if p.slot < len(c.locals) {
			v = c.locals[p.slot]
		}
	}
	if len(p.parts) == 0 {
		return v, nil
	}
	return walkPath(v, p.parts), nil
}

// walkPath follows parts from v as MongoDB's field paths do: through
// documents, and through arrays by collecting the path from each element
// that is a document (other elements, nested arrays included, are
// skipped, as are elements where the rest of the path is missing).
func walkPath(v any, parts []string) any {
	switch x := v.(type) {
	case bson.D:
		f, ok := field(x, parts[0])
		if !ok {
			return Missing
		}
		if len(parts) == 1 {
			return f
		}
		return walkPath(f, parts[1:])
	case bson.A:
		out := bson.A{}
		for _, e := range x {
			if d, ok := e.(bson.D); ok {
				if r := walkPath(d, parts); !IsMissing(r) {
					out = append(out, r)
				}
			}
		}
		return out
	}
	return Missing
}

func field(d bson.D, name string) (any, bool) {
	for _, e := range d {
		if e.Key == name {
			return e.Value, true
		}
	}
	return nil, false
}

// Compile parses an $expr argument into a filter predicate: true when
// the expression's value is truthy. It is registered with package query.
func Compile(arg any, vars map[string]any) (query.ExprPredicate, error) {
	e, err := Parse(arg, NewScope(vars))
	if err != nil {
		return nil, err
	}
	now := nowOf(vars)
	return func(doc bson.D) (bool, error) {
		v, err := e.Eval(NewCtx(doc, vars, now))
		if err != nil {
			return false, err
		}
		return Truthy(v), nil
	}, nil
}

func init() { query.RegisterExpr(Compile) }
