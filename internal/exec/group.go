package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// groupStage is $group: it keeps one state per group, so memory grows with
// the number of groups (and what $push and $addToSet collect), never with
// the number of documents; at finish it emits the groups in the order they
// first appeared.
type groupStage struct {
	next   Stage
	idExpr any
	fields []string
	accs   []accumulator
	groups map[string]*groupState
	order  []string
	mem    int
}

type accumulator struct {
	op   string
	expr any
}

type groupState struct {
	id     any
	sums   []sum
	vals   []any
	arrays []bson.A
	counts []int64
}

func newGroupStage(spec bson.D, next Stage) (*groupStage, error) {
	idExpr, ok := lookup(spec, "_id")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	g := &groupStage{next: next, idExpr: idExpr, groups: map[string]*groupState{}}
	for _, e := range spec {
		if e.Key == "_id" {
			continue
		}
		d, ok := e.Value.(bson.D)
		if !ok || len(d) != 1 {
			return nil, mongoerr.Newf(mongoerr.Location40234, "The field '%s' must be an accumulator object", e.Key)
		}
		switch d[0].Key {
		case "$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count":
		default:
			return nil, mongoerr.Newf(mongoerr.Location15952, "unknown group operator '%s'", d[0].Key)
		}
		g.fields = append(g.fields, e.Key)
		g.accs = append(g.accs, accumulator{d[0].Key, d[0].Value})
	}
	return g, nil
}

// grow counts n more bytes held.
func (g *groupStage) grow(n int) error {
	if g.mem += n; g.mem > MaxMemoryBytes {
		return Exceeded("$group")
	}
	return nil
}

func (g *groupStage) Push(doc bson.D) error {
	id, err := evalExpr(doc, g.idExpr)
	if err != nil {
		return err
	}
	k := string(query.AppendKey(nil, id))
	st := g.groups[k]
	if st == nil {
		n := len(g.accs)
		st = &groupState{id: id, sums: make([]sum, n), vals: make([]any, n), arrays: make([]bson.A, n), counts: make([]int64, n)}
		g.groups[k] = st
		g.order = append(g.order, k)
		if err := g.grow(2*len(k) + 64 + 96*n); err != nil {
			return err
		}
	}
	for i, a := range g.accs {
		if a.op == "$count" {
			st.sums[i].add(int32(1))
			continue
		}
		v, err := evalExpr(doc, a.expr)
		if err != nil {
			return err
		}
		switch a.op {
		case "$sum", "$avg":
			if isNumber(v) {
				st.sums[i].add(v)
				st.counts[i]++
			}
		case "$min", "$max":
			if v == nil {
				continue
			}
			c := query.Compare(v, st.vals[i])
			if st.counts[i] == 0 || (a.op == "$min" && c < 0) || (a.op == "$max" && c > 0) {
				st.vals[i] = v
			}
			st.counts[i]++
		case "$first":
			if st.counts[i] == 0 {
				st.vals[i] = v
			}
			st.counts[i]++
		case "$last":
			st.vals[i] = v
		case "$push":
			st.arrays[i] = append(st.arrays[i], v)
			if err := g.grow(16 + valueMemory(v)); err != nil {
				return err
			}
		case "$addToSet":
			dup := false
			for _, x := range st.arrays[i] {
				if query.Compare(x, v) == 0 {
					dup = true
					break
				}
			}
			if !dup {
				st.arrays[i] = append(st.arrays[i], v)
				if err := g.grow(16 + valueMemory(v)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (g *groupStage) Finish() error {
	for _, k := range g.order {
		st := g.groups[k]
		d := bson.D{{Key: "_id", Value: st.id}}
		for i, a := range g.accs {
			var v any
			switch a.op {
			case "$sum", "$count":
				v = st.sums[i].value()
			case "$avg":
				if st.counts[i] > 0 {
					v = st.sums[i].mean(st.counts[i])
				}
			case "$push", "$addToSet":
				if st.arrays[i] == nil {
					st.arrays[i] = bson.A{}
				}
				v = st.arrays[i]
			default:
				v = st.vals[i]
			}
			d = append(d, bson.E{Key: g.fields[i], Value: v})
		}
		delete(g.groups, k)
		if err := g.next.Push(d); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	return g.next.Finish()
}
