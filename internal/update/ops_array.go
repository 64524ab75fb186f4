package update

import (
	"math"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// pushMod is $push, with the $each, $position, $sort and $slice modifiers.
type pushMod struct {
	values   bson.A
	position *int64
	slice    *int64
	sort     *sortSpec
}

func parsePush(_ string, arg any) (modifier, error) {
	d, ok := arg.(bson.D)
	if !ok || fieldIndex(d, "$each") < 0 {
		// Without $each the argument is pushed as is, even a document
		// that happens to contain other $-fields.
		return &pushMod{values: bson.A{arg}}, nil
	}
	m := &pushMod{}
	for _, e := range d {
		switch e.Key {
		case "$each":
			arr, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue,
					"The argument to $each in $push must be an array but it was of type: %s", query.TypeName(e.Value))
			}
			m.values = arr
		case "$slice":
			n, ok := integral(e.Value)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue,
					"The value for $slice must be an integer value but was given type: %s", query.TypeName(e.Value))
			}
			m.slice = &n
		case "$position":
			n, ok := integral(e.Value)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue,
					"The value for $position must be an integer value, not of type: %s", query.TypeName(e.Value))
			}
			m.position = &n
		case "$sort":
			s, err := parseSortSpec(e.Value)
			if err != nil {
				return nil, err
			}
			m.sort = s
		default:
			return nil, mongoerr.Newf(mongoerr.BadValue, "Unrecognized clause in $push: %s", e.Key)
		}
	}
	return m, nil
}

// integral converts a number with no fractional part to int64.
func integral(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	}
	return 0, false
}

func (m *pushMod) apply(c *applyCtx, op *fieldOp) error {
	var arr bson.A
	if old, ok := getPath(*c.root, op.parts); ok {
		if arr, ok = old.(bson.A); !ok {
			return mongoerr.Newf(mongoerr.BadValue,
				"The field '%s' must be an array but is of type %s in document {%s}",
				op.parts[len(op.parts)-1], query.TypeName(old), idText(c.orig))
		}
	}
	pos := int64(len(arr))
	if m.position != nil {
		pos = *m.position
		if pos < 0 {
			pos = max(int64(len(arr))+pos, 0)
		}
		pos = min(pos, int64(len(arr)))
	}
	out := make(bson.A, 0, len(arr)+len(m.values))
	out = append(out, arr[:pos]...)
	for _, v := range m.values {
		out = append(out, deepCopy(v))
	}
	out = append(out, arr[pos:]...)
	if m.sort != nil {
		m.sort.sort(out)
	}
	if m.slice != nil {
		n := *m.slice
		switch {
		case n >= 0 && n < int64(len(out)):
			out = out[:n]
		case n < 0 && -n < int64(len(out)):
			out = out[int64(len(out))+n:]
		}
	}
	return setPath(c.root, op.parts, out)
}

// sortSpec is the $sort modifier of $push: whole elements (fields nil) or
// embedded fields, each ascending (1) or descending (-1).
type sortSpec struct {
	dir    int
	fields bson.D // values are int: 1 or -1
}

func parseSortSpec(v any) (*sortSpec, error) {
	if d, ok := v.(bson.D); ok {
		if len(d) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "The $sort pattern is empty when it should be a set of fields.")
		}
		s := &sortSpec{}
		for _, e := range d {
			dir, ok := sortDirection(e.Value)
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
			}
			if e.Key == "" {
				return nil, mongoerr.New(mongoerr.BadValue, "The $sort field cannot be empty")
			}
			s.fields = append(s.fields, bson.E{Key: e.Key, Value: dir})
		}
		return s, nil
	}
	if dir, ok := sortDirection(v); ok {
		return &sortSpec{dir: dir}, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue,
		"The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
}

func sortDirection(v any) (int, bool) {
	if !isNumber(v) {
		return 0, false
	}
	switch f := numberAsFloat(v); f {
	case 1:
		return 1, true
	case -1:
		return -1, true
	}
	return 0, false
}

// numberAsFloat is the value of a number as float64; decimals go through
// their string form, which is exact for the small integers this is used
// to recognise.
func numberAsFloat(v any) float64 {
	if d, ok := v.(bson.Decimal128); ok {
		f, err := strconv.ParseFloat(d.String(), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return toFloat(v)
}

func (s *sortSpec) sort(a bson.A) {
	slices.SortStableFunc(a, func(x, y any) int {
		if s.fields == nil {
			return s.dir * compareValues(x, y)
		}
		for _, f := range s.fields {
			c := compareValues(sortKey(x, f.Key), sortKey(y, f.Key))
			if c != 0 {
				return f.Value.(int) * c
			}
		}
		return 0
	})
}

// sortKey is the value an element sorts by under a field pattern; elements
// that are not documents, or lack the field, sort as null.
func sortKey(elem any, path string) any {
	d, ok := elem.(bson.D)
	if !ok {
		return nil
	}
	v, ok := lookupValue(d, path)
	if !ok {
		return nil
	}
	return v
}

// addToSetMod is $addToSet, with or without $each.
type addToSetMod struct{ values bson.A }

func parseAddToSet(_ string, arg any) (modifier, error) {
	d, ok := arg.(bson.D)
	if !ok || len(d) == 0 || d[0].Key != "$each" {
		return &addToSetMod{values: bson.A{arg}}, nil
	}
	if len(d) > 1 {
		return nil, mongoerr.Newf(mongoerr.BadValue,
			"Found unexpected fields after $each in $addToSet: %s", formatValue(d))
	}
	arr, ok := d[0].Value.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch,
			"The argument to $each in $addToSet must be an array but it was of type %s", query.TypeName(d[0].Value))
	}
	return &addToSetMod{values: arr}, nil
}

func (m *addToSetMod) apply(c *applyCtx, op *fieldOp) error {
	var arr bson.A
	old, exists := getPath(*c.root, op.parts)
	if exists {
		var ok bool
		if arr, ok = old.(bson.A); !ok {
			return mongoerr.Newf(mongoerr.BadValue,
				"Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s",
				op.parts[len(op.parts)-1], query.TypeName(old))
		}
	}
	out := slices.Clone(arr)
	for _, v := range m.values {
		if !slices.ContainsFunc(out, func(e any) bool { return compareValues(e, v) == 0 }) {
			out = append(out, deepCopy(v))
		}
	}
	if exists && len(out) == len(arr) {
		return nil
	}
	if out == nil {
		out = bson.A{}
	}
	return setPath(c.root, op.parts, out)
}

// popMod is $pop.
type popMod struct{ first bool }

func parsePop(path string, arg any) (modifier, error) {
	if !isNumber(arg) {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "Expected a number in: %s: %s", path, formatValue(arg))
	}
	switch numberAsFloat(arg) {
	case 1:
		return popMod{}, nil
	case -1:
		return popMod{first: true}, nil
	}
	return nil, mongoerr.Newf(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %s", formatValue(arg))
}

func (m popMod) apply(c *applyCtx, op *fieldOp) error {
	old, ok := getPath(*c.root, op.parts)
	if !ok {
		return nil
	}
	arr, ok := old.(bson.A)
	if !ok {
		return mongoerr.Newf(mongoerr.TypeMismatch,
			"Path '%s' contains an element of non-array type '%s'", op.path, query.TypeName(old))
	}
	if len(arr) == 0 {
		return nil
	}
	if m.first {
		return setPath(c.root, op.parts, slices.Clone(arr[1:]))
	}
	return setPath(c.root, op.parts, slices.Clone(arr[:len(arr)-1]))
}

// pullMod is $pull and $pullAll: remove every element the predicate
// accepts.
type pullMod struct {
	name  string
	match func(elem any) bool
}

func parsePull(_ string, arg any) (modifier, error) {
	match, err := elementMatcher(arg)
	if err != nil {
		return nil, err
	}
	return &pullMod{name: "$pull", match: match}, nil
}

func parsePullAll(_ string, arg any) (modifier, error) {
	values, ok := arg.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.BadValue,
			"$pullAll requires an array argument but was given a %s", query.TypeName(arg))
	}
	return &pullMod{name: "$pullAll", match: func(elem any) bool {
		return slices.ContainsFunc(values, func(v any) bool { return compareValues(elem, v) == 0 })
	}}, nil
}

func (m *pullMod) apply(c *applyCtx, op *fieldOp) error {
	old, ok := getPath(*c.root, op.parts)
	if !ok {
		return nil
	}
	arr, ok := old.(bson.A)
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue, "Cannot apply %s to a non-array value", m.name)
	}
	out := make(bson.A, 0, len(arr))
	for _, e := range arr {
		if !m.match(e) {
			out = append(out, e)
		}
	}
	if len(out) == len(arr) {
		return nil
	}
	return setPath(c.root, op.parts, out)
}
