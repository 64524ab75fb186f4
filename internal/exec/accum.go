package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/query"
)

// An accumulator folds the values of one $group field over a group's
// documents. add returns how many more bytes it holds.
type accumulator interface {
	add(v any) (int, error)
	value() any
}

var accumulators = map[string]func() accumulator{
	"$sum":          func() accumulator { return &sumAcc{} },
	"$count":        func() accumulator { return &sumAcc{} },
	"$avg":          func() accumulator { return &avgAcc{} },
	"$min":          func() accumulator { return &minMaxAcc{sign: -1} },
	"$max":          func() accumulator { return &minMaxAcc{sign: 1} },
	"$first":        func() accumulator { return &firstAcc{} },
	"$last":         func() accumulator { return &lastAcc{} },
	"$push":         func() accumulator { return &pushAcc{} },
	"$addToSet":     func() accumulator { return &setAcc{seen: map[string]bool{}} },
	"$stdDevPop":    func() accumulator { return &stdDevAcc{pop: true} },
	"$stdDevSamp":   func() accumulator { return &stdDevAcc{} },
	"$mergeObjects": func() accumulator { return &mergeAcc{} },
	"$concatArrays": func() accumulator { return &arrayAcc{op: "$concatArrays"} },
	"$setUnion":     func() accumulator { return &arrayAcc{op: "$setUnion", set: &setAcc{seen: map[string]bool{}}} },
}

// sumAcc is $sum (and $count): non-numbers are ignored.
type sumAcc struct{ s expr.Sum }

func (a *sumAcc) add(v any) (int, error) {
	a.s.Add(v)
	return 0, nil
}

func (a *sumAcc) value() any { return a.s.Value() }

// avgAcc is $avg: the mean of the numbers, null when there were none.
type avgAcc struct{ s expr.Sum }

func (a *avgAcc) add(v any) (int, error) {
	a.s.Add(v)
	return 0, nil
}

func (a *avgAcc) value() any { return a.s.Mean() }

// minMaxAcc is $min (sign -1) and $max (sign 1) in BSON order; null and
// missing are ignored, and a group of none gives null.
type minMaxAcc struct {
	sign int
	v    any
	set  bool
}

func (a *minMaxAcc) add(v any) (int, error) {
	switch v.(type) {
	case nil, bson.Undefined:
		return 0, nil
	}
	if expr.IsMissing(v) {
		return 0, nil
	}
	if !a.set || query.Compare(v, a.v)*a.sign > 0 {
		a.v, a.set = v, true
		return valueMemory(v), nil
	}
	return 0, nil
}

func (a *minMaxAcc) value() any { return a.v }

// firstAcc is $first: the first document's value, missing giving null.
type firstAcc struct {
	v   any
	set bool
}

func (a *firstAcc) add(v any) (int, error) {
	if a.set {
		return 0, nil
	}
	a.set = true
	if expr.IsMissing(v) {
		v = nil
	}
	a.v = v
	return valueMemory(v), nil
}

func (a *firstAcc) value() any { return a.v }

// lastAcc is $last.
type lastAcc struct{ v any }

func (a *lastAcc) add(v any) (int, error) {
	if expr.IsMissing(v) {
		v = nil
	}
	a.v = v
	return 0, nil
}

func (a *lastAcc) value() any { return a.v }

// pushAcc is $push: every value but missing ones.
type pushAcc struct{ vals bson.A }

func (a *pushAcc) add(v any) (int, error) {
	if expr.IsMissing(v) {
		return 0, nil
	}
	a.vals = append(a.vals, v)
	return 16 + valueMemory(v), nil
}

func (a *pushAcc) value() any {
	if a.vals == nil {
		return bson.A{}
	}
	return a.vals
}

// setAcc is $addToSet: distinct values (by BSON equality) in the order
// first seen.
type setAcc struct {
	vals bson.A
	seen map[string]bool
}

func (a *setAcc) add(v any) (int, error) {
	if expr.IsMissing(v) {
		return 0, nil
	}
	k := string(query.AppendKey(nil, v))
	if a.seen[k] {
		return 0, nil
	}
	a.seen[k] = true
	a.vals = append(a.vals, v)
	return 16 + 2*len(k) + valueMemory(v), nil
}

func (a *setAcc) value() any {
	if a.vals == nil {
		return bson.A{}
	}
	return a.vals
}

// stdDevAcc is $stdDevPop and $stdDevSamp.
type stdDevAcc struct {
	pop bool
	s   expr.StdDev
}

func (a *stdDevAcc) add(v any) (int, error) {
	a.s.Add(v)
	return 0, nil
}

func (a *stdDevAcc) value() any { return a.s.Value(a.pop) }

// mergeAcc is $mergeObjects.
type mergeAcc struct{ d bson.D }

func (a *mergeAcc) add(v any) (int, error) {
	before := DocMemory(a.d)
	d, err := expr.MergeObjects(a.d, v)
	if err != nil {
		return 0, err
	}
	a.d = d
	return DocMemory(d) - before, nil
}

func (a *mergeAcc) value() any {
	if a.d == nil {
		return bson.D{}
	}
	return a.d
}
