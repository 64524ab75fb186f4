package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// opFunc computes an operator from its evaluated arguments.
type opFunc func(args []any) (any, error)

// opExpr is an operator whose arguments are all evaluated first.
type opExpr struct {
	args []Expr
	fn   opFunc
}

func (o *opExpr) Eval(c *Ctx) (any, error) {
	vals := make([]any, len(o.args))
	for i, a := range o.args {
		v, err := a.Eval(c)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return o.fn(vals)
}

// lazyExpr is an operator that evaluates its arguments itself ($and,
// $cond, $filter, ...).
type lazyExpr struct {
	args []Expr
	fn   func(c *Ctx, args []Expr) (any, error)
}

func (l *lazyExpr) Eval(c *Ctx) (any, error) { return l.fn(c, l.args) }

// parser parses one operator's argument.
type parser func(name string, arg any, s *Scope) (Expr, error)

var operators map[string]parser

func init() {
	operators = map[string]parser{
		"$meta":    parseMeta,
		"$literal": func(_ string, arg any, _ *Scope) (Expr, error) { return constant{arg}, nil },
		"$let":     parseLet,
		"$and":     lazy(0, -1, evalAnd),
		"$or":      lazy(0, -1, evalOr),
		"$not":     nary(1, 1, func(a []any) (any, error) { return !Truthy(a[0]), nil }),
		"$cond":    parseCond,
		"$ifNull":  parseIfNull,
		"$switch":  parseSwitch,
		"$eq":      cmpOp(func(c int) any { return c == 0 }),
		"$ne":      cmpOp(func(c int) any { return c != 0 }),
		"$gt":      cmpOp(func(c int) any { return c > 0 }),
		"$gte":     cmpOp(func(c int) any { return c >= 0 }),
		"$lt":      cmpOp(func(c int) any { return c < 0 }),
		"$lte":     cmpOp(func(c int) any { return c <= 0 }),
		"$cmp":     cmpOp(func(c int) any { return int32(c) }),

		"$mergeObjects":  nary(0, -1, mergeObjects),
		"$objectToArray": nary(1, 1, objectToArray),
		"$arrayToObject": nary(1, 1, arrayToObject),
	}
	for _, group := range []map[string]parser{arithmeticOps(), stringOps(), arrayOps(), dateOps(), typeOps(), setOps(), dateArithOps(),
		trigOps(), bitOps(), fieldOps(), miscOps(), sortZipOps(), nOps(), quantileOps()} {
		for k, v := range group {
			operators[k] = v
		}
	}
}

func parseOperator(name string, arg any, s *Scope) (Expr, error) {
	p, ok := operators[name]
	if !ok {
		if unsupportedOperators[name] {
			return nil, mongoerr.Newf(mongoerr.NotImplemented, "the expression operator %s is not supported by tierdb", name)
		}
		return nil, mongoerr.Newf(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", name)
	}
	return p(name, arg, s)
}

// parseArgs parses an operator's argument list: an array, or a single
// expression standing for a list of one. max -1 means no limit.
func parseArgs(name string, arg any, s *Scope, min, max int) ([]Expr, error) {
	list, isArray := arg.(bson.A)
	if !isArray {
		list = bson.A{arg}
	}
	n := len(list)
	switch {
	case min == max && n != min:
		return nil, mongoerr.Newf(mongoerr.Location16020, "Expression %s takes exactly %d arguments. %d were passed in.", name, min, n)
	case n < min || (max >= 0 && n > max):
		if max < 0 {
			return nil, mongoerr.Newf(mongoerr.Location16020, "Expression %s takes at least %d arguments. %d were passed in.", name, min, n)
		}
		return nil, mongoerr.Newf(mongoerr.Location28667, "Expression %s takes at least %d arguments, and at most %d. %d were passed in.", name, min, max, n)
	}
	out := make([]Expr, n)
	for i, a := range list {
		e, err := Parse(a, s)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// nary is an operator of min..max arguments, all evaluated before fn.
func nary(min, max int, fn opFunc) parser {
	return naryNamed(min, max, func(_ string, a []any) (any, error) { return fn(a) })
}

// naryNamed is nary for functions that name the operator in errors.
func naryNamed(min, max int, fn func(name string, args []any) (any, error)) parser {
	return func(name string, arg any, s *Scope) (Expr, error) {
		args, err := parseArgs(name, arg, s, min, max)
		if err != nil {
			return nil, err
		}
		return &opExpr{args: args, fn: func(a []any) (any, error) { return fn(name, a) }}, nil
	}
}

func lazy(min, max int, fn func(c *Ctx, args []Expr) (any, error)) parser {
	return func(name string, arg any, s *Scope) (Expr, error) {
		args, err := parseArgs(name, arg, s, min, max)
		if err != nil {
			return nil, err
		}
		return &lazyExpr{args: args, fn: fn}, nil
	}
}

func evalAnd(c *Ctx, args []Expr) (any, error) {
	for _, a := range args {
		v, err := a.Eval(c)
		if err != nil {
			return nil, err
		}
		if !Truthy(v) {
			return false, nil
		}
	}
	return true, nil
}

func evalOr(c *Ctx, args []Expr) (any, error) {
	for _, a := range args {
		v, err := a.Eval(c)
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			return true, nil
		}
	}
	return false, nil
}

func cmpOp(result func(int) any) parser {
	return nary(2, 2, func(a []any) (any, error) { return result(Compare(a[0], a[1])), nil })
}

func parseLet(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location16874, "$let only supports an object as its argument")
	}
	var varsArg, inArg any
	hasVars, hasIn := false, false
	for _, e := range d {
		switch e.Key {
		case "vars":
			varsArg, hasVars = e.Value, true
		case "in":
			inArg, hasIn = e.Value, true
		default:
			return nil, mongoerr.Newf(mongoerr.Location16875, "Unrecognized parameter to $let: %s", e.Key)
		}
	}
	if !hasVars {
		return nil, mongoerr.New(mongoerr.Location16876, "Missing 'vars' parameter to $let")
	}
	if !hasIn {
		return nil, mongoerr.New(mongoerr.Location16877, "Missing 'in' parameter to $let")
	}
	vars, ok := varsArg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location10065, "invalid parameter: expected an object (vars)")
	}
	l := &letExpr{}
	inner := s
	for _, v := range vars {
		if v.Key == "CURRENT" {
			// The one system variable a $let may rebind: field paths in
			// 'in' then read the new value.
			e, err := Parse(v.Value, s)
			if err != nil {
				return nil, err
			}
			l.current = e
			continue
		}
		if err := checkVarName(v.Key); err != nil {
			return nil, err
		}
		e, err := Parse(v.Value, s) // the values see only the outer variables
		if err != nil {
			return nil, err
		}
		var slot int
		inner, slot = inner.bind(v.Key)
		l.slots = append(l.slots, slot)
		l.values = append(l.values, e)
	}
	in, err := Parse(inArg, inner)
	if err != nil {
		return nil, err
	}
	l.in = in
	return l, nil
}

type letExpr struct {
	slots  []int
	values []Expr
	in     Expr
	// current, when the $let rebinds CURRENT, is its new value.
	current Expr
}

func (l *letExpr) Eval(c *Ctx) (any, error) {
	vals := make([]any, len(l.values))
	for i, e := range l.values {
		v, err := e.Eval(c)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	var current any
	if l.current != nil {
		v, err := l.current.Eval(c)
		if err != nil {
			return nil, err
		}
		current = v
	}
	for i, slot := range l.slots {
		c.setLocal(slot, vals[i])
	}
	if l.current == nil {
		return l.in.Eval(c)
	}
	saved := c.current
	c.current = current
	defer func() { c.current = saved }()
	return l.in.Eval(c)
}

func parseCond(name string, arg any, s *Scope) (Expr, error) {
	var ifE, thenE, elseE Expr
	if d, isDoc := arg.(bson.D); !isDoc {
		args, err := parseArgs(name, arg, s, 3, 3)
		if err != nil {
			return nil, err
		}
		ifE, thenE, elseE = args[0], args[1], args[2]
	} else {
		for _, e := range d {
			x, err := Parse(e.Value, s)
			if err != nil {
				return nil, err
			}
			switch e.Key {
			case "if":
				ifE = x
			case "then":
				thenE = x
			case "else":
				elseE = x
			default:
				return nil, mongoerr.Newf(mongoerr.Location17083, "Unrecognized parameter to $cond: %s", e.Key)
			}
		}
		switch {
		case ifE == nil:
			return nil, mongoerr.New(mongoerr.Location17080, "Missing 'if' parameter to $cond")
		case thenE == nil:
			return nil, mongoerr.New(mongoerr.Location17081, "Missing 'then' parameter to $cond")
		case elseE == nil:
			return nil, mongoerr.New(mongoerr.Location17082, "Missing 'else' parameter to $cond")
		}
	}
	return &lazyExpr{args: []Expr{ifE, thenE, elseE}, fn: func(c *Ctx, a []Expr) (any, error) {
		v, err := a[0].Eval(c)
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			return a[1].Eval(c)
		}
		return a[2].Eval(c)
	}}, nil
}

func parseIfNull(name string, arg any, s *Scope) (Expr, error) {
	args, err := parseArgs(name, arg, s, 0, -1)
	if err != nil {
		return nil, err
	}
	if len(args) < 2 {
		return nil, mongoerr.Newf(mongoerr.Location1257300, "$ifNull needs at least two arguments, had: %d", len(args))
	}
	return &lazyExpr{args: args, fn: func(c *Ctx, a []Expr) (any, error) {
		for i, e := range a {
			v, err := e.Eval(c)
			if err != nil {
				return nil, err
			}
			if !nullish(v) || i == len(a)-1 {
				return v, nil
			}
		}
		return Missing, nil
	}}, nil
}

func parseSwitch(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40060, "$switch requires an object as an argument, found: %s", TypeName(arg))
	}
	sw := &switchExpr{}
	for _, e := range d {
		switch e.Key {
		case "branches":
			branches, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40061, "$switch expected an array for 'branches', found: %s", TypeName(e.Value))
			}
			for _, b := range branches {
				bd, ok := b.(bson.D)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location40062, "$switch expected each branch to be an object, found: %s", TypeName(b))
				}
				var caseE, thenE Expr
				for _, f := range bd {
					x, err := Parse(f.Value, s)
					if err != nil {
						return nil, err
					}
					switch f.Key {
					case "case":
						caseE = x
					case "then":
						thenE = x
					default:
						return nil, mongoerr.Newf(mongoerr.Location40063, "$switch found an unknown argument to a branch: %s", f.Key)
					}
				}
				if caseE == nil {
					return nil, mongoerr.New(mongoerr.Location40064, "$switch requires each branch have a 'case' expression")
				}
				if thenE == nil {
					return nil, mongoerr.New(mongoerr.Location40065, "$switch requires each branch have a 'then' expression.")
				}
				sw.cases = append(sw.cases, caseE)
				sw.thens = append(sw.thens, thenE)
			}
		case "default":
			x, err := Parse(e.Value, s)
			if err != nil {
				return nil, err
			}
			sw.def = x
		default:
			return nil, mongoerr.Newf(mongoerr.Location40067, "$switch found an unknown argument: %s", e.Key)
		}
	}
	if len(sw.cases) == 0 {
		return nil, mongoerr.New(mongoerr.Location40068, "$switch requires at least one branch.")
	}
	return sw, nil
}

type switchExpr struct {
	cases, thens []Expr
	def          Expr
}

func (sw *switchExpr) Eval(c *Ctx) (any, error) {
	for i, ce := range sw.cases {
		v, err := ce.Eval(c)
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			return sw.thens[i].Eval(c)
		}
	}
	if sw.def == nil {
		return nil, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return sw.def.Eval(c)
}

// MergeObjects merges v (a document, or null/missing which are skipped)
// into into, later fields replacing earlier ones in place. $group's
// $mergeObjects accumulator uses it too.
func MergeObjects(into bson.D, v any) (bson.D, error) {
	if nullish(v) {
		return into, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s", FormatValue(v), TypeName(v))
	}
	for _, e := range d {
		into = setField(into, e.Key, e.Value)
	}
	return into, nil
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

func mergeObjects(args []any) (any, error) {
	out := bson.D{}
	for _, a := range args {
		var err error
		if out, err = MergeObjects(out, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func objectToArray(a []any) (any, error) {
	v := a[0]
	if nullish(v) {
		return nil, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40390, "$objectToArray requires a document input, found: %s", TypeName(v))
	}
	out := make(bson.A, len(d))
	for i, e := range d {
		out[i] = bson.D{{Key: "k", Value: e.Key}, {Key: "v", Value: e.Value}}
	}
	return out, nil
}

func arrayToObject(a []any) (any, error) {
	v := a[0]
	if nullish(v) {
		return nil, nil
	}
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40386, "$arrayToObject requires an array input, found: %s", TypeName(v))
	}
	out := bson.D{}
	if len(arr) == 0 {
		return out, nil
	}
	_, pairs := arr[0].(bson.A)
	if _, isDoc := arr[0].(bson.D); !pairs && !isDoc {
		return nil, mongoerr.Newf(mongoerr.Location40398, "Unrecognised input type format for $arrayToObject: %s", TypeName(arr[0]))
	}
	for _, e := range arr {
		var key string
		var val any
		if pairs {
			p, ok := e.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40396, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Array was detected, now found: %s", TypeName(e))
			}
			if len(p) != 2 {
				return nil, mongoerr.Newf(mongoerr.Location40397, "$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(p))
			}
			k, ok := p[0].(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", TypeName(p[0]))
			}
			key, val = k, p[1]
		} else {
			d, ok := e.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40391, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Object was detected, now found: %s", TypeName(e))
			}
			if len(d) != 2 {
				return nil, mongoerr.Newf(mongoerr.Location40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", len(d))
			}
			kv, hasK := field(d, "k")
			vv, hasV := field(d, "v")
			if !hasK || !hasV {
				return nil, mongoerr.Newf(mongoerr.Location40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s", formatDoc(d))
			}
			k, ok := kv.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40394, "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: %s", TypeName(kv))
			}
			key, val = k, vv
		}
		out = setField(out, key, val)
	}
	return out, nil
}
