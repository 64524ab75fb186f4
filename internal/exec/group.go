package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// groupStage is $group: it keeps one state per group, so memory grows with
// the number of groups (and what $push, $addToSet and $mergeObjects
// collect), never with the number of documents; at Finish it emits the
// groups in the order they first appeared.
type groupStage struct {
	next   Stage
	id     func(doc bson.D) (any, error)
	fields []string
	specs  []accSpec
	groups map[string]*groupState
	order  []string
	mem    int
	ev     *evaluator
	// spill: past the limit, new groups' documents go to overflow
	// (a file in tempDir) for a later pass.
	spill       bool
	tempDir     string
	overflowing bool
	overflow    *spillFile
}

type accSpec struct {
	op  string
	arg expr.Expr
	// n and build make the accumulators that take a specification
	// (accum_n.go); nil build: accumulators[op].
	n     expr.Expr
	build func(n int) accumulator
}

type groupState struct {
	id   any
	accs []accumulator
}

// unsupportedAccumulators are MongoDB accumulators tierdb does not run:
// $accumulator runs server-side JavaScript.
var unsupportedAccumulators = map[string]bool{"$accumulator": true}

func newGroupStage(spec bson.D, next Stage, env *Env) (*groupStage, error) {
	idArg, ok := lookup(spec, "_id")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	scope := env.scope()
	idExpr, err := expr.Parse(idArg, scope)
	if err != nil {
		return nil, err
	}
	// A spilled document would lose its text score: a $group that reads
	// it does not spill (meta.go).
	spill := env.AllowDiskUse && (env.TextScore == nil || !hasMetaKey(spec))
	g := &groupStage{next: next, groups: map[string]*groupState{}, ev: newEvaluator(env), spill: spill, tempDir: env.TempDir}
	g.id = func(doc bson.D) (any, error) { return g.ev.eval(idExpr, doc) }
	if err := g.parseAccumulators(spec, scope); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *groupStage) parseAccumulators(spec bson.D, scope *expr.Scope) error {
	for _, e := range spec {
		if e.Key == "_id" {
			continue
		}
		if strings.HasPrefix(e.Key, "$") {
			return mongoerr.Newf(mongoerr.Location40236, "The field name '%s' cannot be an operator name", e.Key)
		}
		if strings.Contains(e.Key, ".") {
			return mongoerr.Newf(mongoerr.Location40235, "The field name '%s' cannot contain '.'", e.Key)
		}
		d, ok := e.Value.(bson.D)
		if !ok || len(d) != 1 {
			return mongoerr.Newf(mongoerr.Location40234, "The field '%s' must be an accumulator object", e.Key)
		}
		op, arg := d[0].Key, d[0].Value
		if parse := specialAccumulators[op]; parse != nil {
			spec, err := parse(op, arg, scope)
			if err != nil {
				return err
			}
			g.fields = append(g.fields, e.Key)
			g.specs = append(g.specs, spec)
			continue
		}
		switch {
		case accumulators[op] != nil:
		case unsupportedAccumulators[op]:
			return mongoerr.Newf(mongoerr.NotImplemented, "the %s accumulator is not supported by tierdb", op)
		default:
			return mongoerr.Newf(mongoerr.Location15952, "unknown group operator '%s'", op)
		}
		if a, isArray := arg.(bson.A); isArray {
			if len(a) != 1 {
				return mongoerr.Newf(mongoerr.Location40237, "The %s accumulator is a unary operator", op)
			}
			arg = a[0]
		}
		if op == "$count" {
			if d, ok := arg.(bson.D); !ok || len(d) != 0 {
				return mongoerr.New(mongoerr.FailedToParse, "$count takes no arguments, i.e. $count:{}")
			}
			arg = int32(1)
		}
		x, err := expr.Parse(arg, scope)
		if err != nil {
			return err
		}
		g.fields = append(g.fields, e.Key)
		g.specs = append(g.specs, accSpec{op: op, arg: x})
	}
	return nil
}

// groupMemoryBytes is what $group holds before it spills or fails (a
// variable for tests).
var groupMemoryBytes = MaxMemoryBytes

// grow counts n more bytes held. Past the limit, a $group allowed to use
// disk takes no new groups (their documents go to a spill file, grouped
// in a later pass) while the groups it holds may still grow, up to twice
// the limit.
func (g *groupStage) grow(n int) error {
	g.mem += n
	switch {
	case g.mem <= groupMemoryBytes:
		return nil
	case g.spill && g.mem <= 2*groupMemoryBytes:
		g.overflowing = true
		return nil
	}
	return Exceeded("$group")
}

func (g *groupStage) Push(doc bson.D) error {
	id, err := g.id(doc)
	if err != nil {
		return err
	}
	if expr.IsMissing(id) {
		id = nil
	}
	k := string(query.AppendKey(nil, id))
	st := g.groups[k]
	if st == nil && g.overflowing {
		return g.spillDoc(doc)
	}
	if st == nil {
		st = &groupState{id: id, accs: make([]accumulator, len(g.specs))}
		for i, s := range g.specs {
			if st.accs[i], err = s.instance(g.ev, id); err != nil {
				return err
			}
		}
		g.groups[k] = st
		g.order = append(g.order, k)
		if err := g.grow(2*len(k) + valueMemory(id) + 64 + 96*len(g.specs)); err != nil {
			return err
		}
	}
	for i, s := range g.specs {
		v, err := g.ev.eval(s.arg, doc)
		if err != nil {
			return err
		}
		n, err := st.accs[i].add(v)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := g.grow(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// spillDoc keeps a document of a group not held for a later pass.
func (g *groupStage) spillDoc(doc bson.D) error {
	if g.overflow == nil {
		f, err := newSpillFile(g.tempDir, "group")
		if err != nil {
			return err
		}
		g.overflow = f
	}
	return g.overflow.write(doc)
}

// Finish emits the groups held, then groups the spilled documents in
// further passes, each emitting what it held.
func (g *groupStage) Finish() error {
	for {
		done, err := g.emit()
		if err != nil || done || g.overflow == nil {
			if g.overflow != nil {
				g.overflow.f.Close()
			}
			if err != nil {
				return err
			}
			return g.next.Finish()
		}
		run, err := g.overflow.run()
		if err != nil {
			return err
		}
		g.overflow, g.overflowing, g.mem = nil, false, 0
		err = g.regroup(run)
		run.f.Close()
		if err != nil {
			return err
		}
	}
}

// regroup pushes a spilled pass's documents through the group again.
func (g *groupStage) regroup(run *sortRun) error {
	for {
		if err := run.next(); err != nil {
			return err
		}
		if run.doc == nil {
			return nil
		}
		if err := g.Push(run.doc); err != nil {
			return err
		}
	}
}

// emit passes the groups held on and forgets them; done when the next
// stage needs no more.
func (g *groupStage) emit() (done bool, err error) {
	defer func() { g.order = nil }()
	for _, k := range g.order {
		st := g.groups[k]
		d := bson.D{{Key: "_id", Value: st.id}}
		for i, a := range st.accs {
			d = append(d, bson.E{Key: g.fields[i], Value: a.value()})
		}
		delete(g.groups, k)
		if err := g.next.Push(d); err == ErrDone {
			return true, nil
		} else if err != nil {
			return false, err
		}
	}
	return false, nil
}
