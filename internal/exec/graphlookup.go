package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// graphLookupStage is $graphLookup: for each document, a breadth-first
// search of another collection of the same database, from the startWith
// values: each round reads the documents whose connectToField matches the
// values found so far (and restrictSearchWithMatch), and their
// connectFromField values are the next round's, until nothing new is
// found or maxDepth rounds have run. The documents found (each once, with
// its round in depthField) become the 'as' array. What one search holds
// counts against the memory limit.
type graphLookupStage struct {
	next        Stage
	env         *Env
	from        string
	startWith   expr.Expr
	connectFrom []string
	connectTo   string
	as          []string
	maxDepth    int64 // -1: none
	depthField  []string
	restrict    bson.D
	ev          *evaluator
}

func newGraphLookup(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40327, "the $graphLookup stage specification must be an object, but found %s", query.TypeName(arg))
	}
	if env.Read == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$graphLookup is not supported here by tierdb")
	}
	g := &graphLookupStage{next: next, env: env, maxDepth: -1, ev: newEvaluator(env)}
	var startWith any
	var as, connectFrom, depthField string
	hasStart := false
	for _, e := range d {
		switch e.Key {
		case "from", "as", "connectFromField", "connectToField", "depthField":
			s, ok := e.Value.(string)
			if !ok {
				if e.Key == "from" {
					return nil, mongoerr.Newf(mongoerr.NotImplemented, "$graphLookup 'from' as %s (another database) is not supported by tierdb", query.TypeName(e.Value))
				}
				return nil, mongoerr.Newf(mongoerr.Location40103, "expected string as argument for %s, found: %s", e.Key, expr.FormatValue(e.Value))
			}
			if e.Key != "from" && (s == "" || strings.HasPrefix(s, "$")) {
				return nil, mongoerr.Newf(mongoerr.Location16410, "FieldPath field names may not be empty or start with '$': %s", s)
			}
			switch e.Key {
			case "from":
				g.from = s
			case "as":
				as = s
			case "connectFromField":
				connectFrom = s
			case "connectToField":
				g.connectTo = s
			default:
				depthField = s
			}
		case "startWith":
			startWith, hasStart = e.Value, true
		case "maxDepth":
			n, ok := query.AsInt(e.Value)
			if f, isFloat := e.Value.(float64); isFloat {
				ok = f == float64(int64(f))
				n = int64(f)
			}
			if !expr.IsNumber(e.Value) {
				return nil, mongoerr.Newf(mongoerr.Location40100, "maxDepth must be numeric, found type: %s", query.TypeName(e.Value))
			}
			if !ok || n < 0 {
				return nil, mongoerr.Newf(mongoerr.Location40101, "maxDepth requires a nonnegative argument, found: %s", expr.FormatValue(e.Value))
			}
			g.maxDepth = n
		case "restrictSearchWithMatch":
			r, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40185, "restrictSearchWithMatch must be an object, found %s", query.TypeName(e.Value))
			}
			g.restrict = r
		default:
			return nil, mongoerr.Newf(mongoerr.Location40104, "Unknown argument to $graphLookup: %s", e.Key)
		}
	}
	if g.from == "" || as == "" || !hasStart || connectFrom == "" || g.connectTo == "" {
		return nil, mongoerr.New(mongoerr.Location40105, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField' and 'connectToField' to be specified")
	}
	x, err := expr.Parse(startWith, env.scope())
	if err != nil {
		return nil, err
	}
	g.startWith = x
	g.as = strings.Split(as, ".")
	g.connectFrom = strings.Split(connectFrom, ".")
	if depthField != "" {
		g.depthField = strings.Split(depthField, ".")
	}
	// Check the restriction now, so that a bad one fails before anything
	// runs.
	if _, err := query.ParseFilterVars(g.restrict, env.Vars); err != nil {
		return nil, err
	}
	return g, nil
}

// addValues adds v (each element of an array) to the frontier, unless it
// was searched for already.
func addValues(v any, searched map[string]bool, frontier bson.A) bson.A {
	vals := bson.A{v}
	if a, isArray := v.(bson.A); isArray {
		vals = a
	}
	for _, x := range vals {
		if expr.IsMissing(x) {
			continue
		}
		k := string(query.AppendKey(nil, x))
		if !searched[k] {
			searched[k] = true
			frontier = append(frontier, x)
		}
	}
	return frontier
}

func (g *graphLookupStage) Push(doc bson.D) error {
	start, err := g.ev.eval(g.startWith, doc)
	if err != nil {
		return err
	}
	searched := map[string]bool{}
	frontier := addValues(start, searched, nil)
	found := map[string]bool{}
	results := bson.A{}
	mem := 0
	for depth := int64(0); len(frontier) > 0 && (g.maxDepth < 0 || depth <= g.maxDepth); depth++ {
		filter := bson.D{{Key: g.connectTo, Value: bson.D{{Key: "$in", Value: frontier}}}}
		if len(g.restrict) > 0 {
			filter = bson.D{{Key: "$and", Value: bson.A{filter, g.restrict}}}
		}
		f, err := query.ParseFilterVars(filter, g.env.Vars)
		if err != nil {
			return err
		}
		var next bson.A
		err = g.env.Read(g.env.Ctx, g.from, f, func(d bson.D) error {
			id, _ := lookup(d, "_id")
			k := string(query.AppendKey(nil, id))
			if found[k] {
				return nil
			}
			found[k] = true
			if v, ok := nestedFieldThroughArrays(d, g.connectFrom); ok {
				next = addValues(v, searched, next)
			}
			if g.depthField != nil {
				d = setPath(d, g.depthField, depth)
			}
			if mem += DocMemory(d) + len(k); mem > MaxMemoryBytes {
				return Exceeded("$graphLookup")
			}
			results = append(results, d)
			return nil
		})
		if err != nil && err != ErrDone {
			return err
		}
		frontier = next
	}
	return emitWithArray(g.next, "$graphLookup", doc, g.as, results, mem)
}

// nestedFieldThroughArrays reads a dotted path, through arrays of
// documents as a field path expression does.
func nestedFieldThroughArrays(d bson.D, parts []string) (any, bool) {
	v, ok := lookup(d, parts[0])
	if !ok || len(parts) == 1 {
		return v, ok
	}
	switch x := v.(type) {
	case bson.D:
		return nestedFieldThroughArrays(x, parts[1:])
	case bson.A:
		var out bson.A
		for _, e := range x {
			if sub, isDoc := e.(bson.D); isDoc {
				if w, ok := nestedFieldThroughArrays(sub, parts[1:]); ok {
					out = append(out, w)
				}
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

func (g *graphLookupStage) Finish() error { return g.next.Finish() }
