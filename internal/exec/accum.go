package exec

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/query"
	"tierdb/internal/update"
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
}

func isNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128:
		return true
	}
	return false
}

// sumAcc is $sum (and $count): non-numbers are ignored.
type sumAcc struct{ s sum }

func (a *sumAcc) add(v any) (int, error) {
	if isNumber(v) {
		a.s.add(v)
	}
	return 0, nil
}

func (a *sumAcc) value() any { return a.s.value() }

// avgAcc is $avg: the mean of the numbers, null when there were none.
type avgAcc struct {
	s sum
	n int64
}

func (a *avgAcc) add(v any) (int, error) {
	if isNumber(v) {
		a.s.add(v)
		a.n++
	}
	return 0, nil
}

func (a *avgAcc) value() any {
	if a.n == 0 {
		return nil
	}
	return a.s.mean(a.n)
}

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

// stdDevAcc is $stdDevPop and $stdDevSamp over the numbers (Welford's
// method); too few numbers give null.
type stdDevAcc struct {
	pop      bool
	n        float64
	mean, m2 float64
}

func (a *stdDevAcc) add(v any) (int, error) {
	if !isNumber(v) {
		return 0, nil
	}
	x := toFloat(v)
	a.n++
	d := x - a.mean
	a.mean += d / a.n
	a.m2 += d * (x - a.mean)
	return 0, nil
}

func (a *stdDevAcc) value() any {
	switch {
	case a.pop && a.n > 0:
		return math.Sqrt(a.m2 / a.n)
	case !a.pop && a.n > 1:
		return math.Sqrt(a.m2 / (a.n - 1))
	}
	return nil
}

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

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case bson.Decimal128:
		f, _ := strconv.ParseFloat(x.String(), 64)
		return f
	}
	return 0
}

// sum adds numbers keeping MongoDB's result type: int32 while it fits, then
// int64, double as soon as a double is added, and exact decimal as soon as
// a Decimal128 is.
type sum struct {
	i       int64
	f       float64
	isFloat bool
	isLong  bool
	dec     *update.DecimalSum // non-nil once a decimal was added
}

func (s *sum) add(v any) {
	if d, isDec := v.(bson.Decimal128); isDec && s.dec == nil {
		// From now on everything adds up as decimal, what came before
		// included.
		s.dec = &update.DecimalSum{}
		s.dec.Add(s.i)
		if s.isFloat {
			s.dec.Add(s.f)
		}
		s.dec.Add(d)
		return
	}
	if s.dec != nil {
		s.dec.Add(v)
		return
	}
	switch n := v.(type) {
	case int32:
		s.addInt(int64(n))
	case int64:
		s.isLong = true
		s.addInt(n)
	case float64:
		s.isFloat = true
		s.f += n
	}
}

func (s *sum) addInt(n int64) {
	if (n > 0 && s.i > math.MaxInt64-n) || (n < 0 && s.i < math.MinInt64-n) {
		s.isFloat = true
		s.f += float64(s.i) + float64(n)
		s.i = 0
		return
	}
	s.i += n
}

func (s *sum) float() float64 { return s.f + float64(s.i) }

// mean is $avg's result over n numbers: double, or decimal once a decimal
// was added.
func (s *sum) mean(n int64) any {
	if s.dec != nil {
		return s.dec.Mean(n)
	}
	return s.float() / float64(n)
}

func (s *sum) value() any {
	switch {
	case s.dec != nil:
		return s.dec.Value()
	case s.isFloat:
		return s.float()
	case s.isLong || s.i > math.MaxInt32 || s.i < math.MinInt32:
		return s.i
	}
	return int32(s.i)
}
