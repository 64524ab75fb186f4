package exec

import (
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The accumulators that take a specification document rather than one
// expression: $firstN, $lastN, $minN and $maxN ({n, input}), $top and
// $bottom ({sortBy, output}), $topN and $bottomN ({n, sortBy, output}),
// $median and $percentile. n is evaluated once per group, against
// {_id: <the group's key>} as MongoDB does, and must be a positive
// integral number. Each keeps at most about 2n values between trims, so
// a group's memory grows with n, not with its documents (but $median's
// and $percentile's, which keep every number).

// specialParser parses one such accumulator into its accSpec.
type specialParser func(op string, arg any, scope *expr.Scope) (accSpec, error)

var specialAccumulators = map[string]specialParser{
	"$firstN": parseNAcc, "$lastN": parseNAcc, "$minN": parseNAcc, "$maxN": parseNAcc,
	"$top": parseTopAcc, "$bottom": parseTopAcc, "$topN": parseTopAcc, "$bottomN": parseTopAcc,
	"$median": parseQuantileAcc, "$percentile": parseQuantileAcc,
}

// instance makes a group's accumulator for s.
func (s accSpec) instance(ev *evaluator, id any) (accumulator, error) {
	if s.build == nil {
		return accumulators[s.op](), nil
	}
	n := int64(1)
	if s.n != nil {
		v, err := ev.eval(s.n, bson.D{{Key: "_id", Value: id}})
		if err != nil {
			return nil, err
		}
		if n, err = expr.ValidateN(v); err != nil {
			return nil, err
		}
	}
	return s.build(int(min(n, 1<<31))), nil
}

func parseNAcc(op string, arg any, scope *expr.Scope) (accSpec, error) {
	code := mongoerr.Location5787900
	if op == "$firstN" || op == "$lastN" {
		code = mongoerr.Location5787801
	}
	n, input, err := expr.ParseNArgs(op, arg, scope, code)
	if err != nil {
		return accSpec{}, err
	}
	build := func(n int) accumulator { return &nAcc{op: op, n: n} }
	return accSpec{op: op, arg: input, n: n, build: build}, nil
}

// held tracks an accumulator's bytes so that add reports only growth
// past the most it ever held (trims give nothing back to $group).
type held struct{ now, peak int }

func (h *held) change(delta int) int {
	h.now += delta
	if h.now <= h.peak {
		return 0
	}
	grown := h.now - h.peak
	h.peak = h.now
	return grown
}

// nAcc is $firstN, $lastN, $minN or $maxN.
type nAcc struct {
	op   string
	n    int
	vals bson.A
	mem  held
}

func (a *nAcc) add(v any) (int, error) {
	if expr.IsMissing(v) {
		v = nil
	}
	switch a.op {
	case "$firstN":
		if len(a.vals) >= a.n {
			return 0, nil
		}
	case "$minN", "$maxN":
		if v == nil || isUndefined(v) {
			return 0, nil
		}
	}
	a.vals = append(a.vals, v)
	grown := a.mem.change(16 + valueMemory(v))
	if len(a.vals) >= 2*a.n {
		before := valueMemory(a.vals)
		if a.op == "$lastN" {
			a.vals = slices.Clone(a.vals[len(a.vals)-a.n:])
		} else if a.op != "$firstN" {
			a.vals = expr.KeepN(a.vals, a.n, a.op == "$maxN")
		}
		a.mem.change(valueMemory(a.vals) - before)
	}
	return grown, nil
}

func (a *nAcc) value() any {
	switch a.op {
	case "$minN", "$maxN":
		return expr.MinMaxN(a.vals, a.n, a.op == "$maxN")
	case "$lastN":
		return slices.Clone(a.vals[len(a.vals)-min(a.n, len(a.vals)):])
	}
	return append(bson.A{}, a.vals...)
}

// sortFieldKey names the k-th sort key in a $top argument's value.
func sortFieldKey(k int) string { return "sortFields" + strconv.Itoa(k) }

func parseTopAcc(op string, arg any, scope *expr.Scope) (accSpec, error) {
	single := op == "$top" || op == "$bottom"
	d, ok := arg.(bson.D)
	if !ok {
		return accSpec{}, mongoerr.Newf(mongoerr.Location5788001, "specification must be an object; found %s: %s", op, expr.FormatValue(arg))
	}
	var nArg, output, sortBy any
	var hasN, hasOutput, hasSort bool
	for _, e := range d {
		switch {
		case e.Key == "n" && !single:
			nArg, hasN = e.Value, true
		case e.Key == "output":
			output, hasOutput = e.Value, true
		case e.Key == "sortBy":
			sortBy, hasSort = e.Value, true
		default:
			return accSpec{}, mongoerr.Newf(mongoerr.Location5788002, "Unknown argument to %s '%s'", op, e.Key)
		}
	}
	switch {
	case !single && !hasN:
		return accSpec{}, mongoerr.New(mongoerr.Location5788003, "Missing value for 'n'")
	case !hasOutput:
		return accSpec{}, mongoerr.New(mongoerr.Location5788004, "Missing value for 'output'")
	case !hasSort:
		return accSpec{}, mongoerr.New(mongoerr.Location5788005, "Missing value for 'sortBy'")
	}
	if err := checkSortStage(sortBy); err != nil {
		return accSpec{}, err
	}
	// The argument is {output, sortFields<k>: "$<path>"}, the sort keys
	// read beside the output so the accumulator keeps only them.
	argDoc := bson.D{{Key: "output", Value: output}}
	var keys bson.D
	for k, e := range sortBy.(bson.D) {
		if _, isMeta := metaSortKey(e.Value); isMeta {
			return accSpec{}, mongoerr.Newf(mongoerr.NotImplemented, "%s sorted by {$meta: ...} is not supported by tierdb", op)
		}
		argDoc = append(argDoc, bson.E{Key: sortFieldKey(k), Value: "$" + e.Key})
		keys = append(keys, bson.E{Key: sortFieldKey(k), Value: e.Value})
	}
	sort, err := query.ParseSort(keys)
	if err != nil {
		return accSpec{}, err
	}
	x, err := expr.Parse(argDoc, scope)
	if err != nil {
		return accSpec{}, err
	}
	var n expr.Expr
	if !single {
		if n, err = expr.Parse(nArg, scope); err != nil {
			return accSpec{}, err
		}
	}
	bottom := op == "$bottom" || op == "$bottomN"
	build := func(n int) accumulator { return &topAcc{n: n, sort: sort, bottom: bottom, single: single} }
	return accSpec{op: op, arg: x, n: n, build: build}, nil
}

// topAcc is $top, $bottom, $topN or $bottomN: the outputs of the n
// documents first (top) or last (bottom) in sortBy's order, a document
// that ties with one already kept never displacing it.
type topAcc struct {
	n      int
	sort   query.Sort
	bottom bool
	single bool
	items  []topItem
	seq    int
	mem    held
}

// topItem is a kept document's sort key and output; size is the bytes
// it was counted for.
type topItem struct {
	key  bson.D
	out  any
	seq  int
	size int
}

func (a *topAcc) add(v any) (int, error) {
	d, _ := v.(bson.D)
	item := topItem{seq: a.seq, size: 48 + DocMemory(d)}
	a.seq++
	for _, e := range d {
		if e.Key == "output" {
			item.out = e.Value
		} else {
			item.key = append(item.key, e)
		}
	}
	a.items = append(a.items, item)
	grown := a.mem.change(item.size)
	if len(a.items) >= 2*a.n {
		a.items = a.kept()
		a.mem.change(itemsSize(a.items) - a.mem.now)
	}
	return grown, nil
}

func itemsSize(items []topItem) int {
	n := 0
	for _, it := range items {
		n += it.size
	}
	return n
}

// kept is the n items that stay, in sortBy's order (ties in the order
// they came).
func (a *topAcc) kept() []topItem {
	items := slices.Clone(a.items)
	slices.SortStableFunc(items, func(x, y topItem) int {
		c := a.sort.Compare(x.key, y.key)
		if a.bottom {
			c = -c
		}
		return c
	})
	items = items[:min(a.n, len(items))]
	slices.SortStableFunc(items, func(x, y topItem) int {
		if c := a.sort.Compare(x.key, y.key); c != 0 {
			return c
		}
		return x.seq - y.seq
	})
	return items
}

func (a *topAcc) value() any {
	items := a.kept()
	if a.single {
		if len(items) == 0 {
			return nil
		}
		return items[0].out
	}
	out := make(bson.A, len(items))
	for i, it := range items {
		out[i] = it.out
	}
	return out
}

func parseQuantileAcc(op string, arg any, scope *expr.Scope) (accSpec, error) {
	q, err := expr.ParseQuantile(op, arg, scope, true)
	if err != nil {
		return accSpec{}, err
	}
	build := func(int) accumulator { return &quantileAcc{q: q} }
	return accSpec{op: op, arg: q.Input, build: build}, nil
}

// quantileAcc is $median or $percentile: it keeps every number.
type quantileAcc struct {
	q    *expr.Quantile
	vals []float64
}

func (a *quantileAcc) add(v any) (int, error) {
	if !expr.IsNumber(v) {
		return 0, nil
	}
	a.vals = append(a.vals, expr.Double(v))
	return 8, nil
}

func (a *quantileAcc) value() any { return a.q.Result(slices.Clone(a.vals)) }

// arrayAcc is $concatArrays (every element, in order) and $setUnion
// (distinct elements in the order first seen): missing is skipped,
// anything but an array is TypeMismatch.
type arrayAcc struct {
	op   string
	vals bson.A
	set  *setAcc
}

func (a *arrayAcc) add(v any) (int, error) {
	if expr.IsMissing(v) {
		return 0, nil
	}
	arr, ok := v.(bson.A)
	if !ok {
		return 0, mongoerr.Newf(mongoerr.TypeMismatch, "%s requires array inputs, but input %s is of type %s", a.op, expr.FormatValue(v), expr.TypeName(v))
	}
	if a.set == nil {
		a.vals = append(a.vals, arr...)
		return valueMemory(arr), nil
	}
	grown := 0
	for _, e := range arr {
		n, _ := a.set.add(e)
		grown += n
	}
	return grown, nil
}

// value is a copy: a growing window reads it after every add.
func (a *arrayAcc) value() any {
	vals := a.vals
	if a.set != nil {
		vals = a.set.vals
	}
	return append(bson.A{}, vals...)
}
