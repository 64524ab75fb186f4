package expr

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// $sortArray sorts an array: by whole values (sortBy 1 or -1, BSON
// order) or by fields of its documents (sortBy a sort document). A sort
// key is the value at its path with no implicit array traversal, as
// MongoDB documents it: an array is compared whole, a path that meets
// anything but a document finds null, and an element that is not a
// document sorts as if every field were null. The sort is stable. $zip
// transposes arrays.

func sortZipOps() map[string]parser {
	return map[string]parser{
		"$sortArray": parseSortArray,
		"$zip":       parseZip,
	}
}

func parseSortArray(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location2942500, "$sortArray requires an object as an argument, found: %s", TypeName(arg))
	}
	var inputArg, sortArg any
	var hasInput, hasSort bool
	for _, e := range d {
		switch e.Key {
		case "input":
			inputArg, hasInput = e.Value, true
		case "sortBy":
			sortArg, hasSort = e.Value, true
		default:
			return nil, mongoerr.Newf(mongoerr.Location2942501, "$sortArray found an unknown argument: %s", e.Key)
		}
	}
	if !hasInput {
		return nil, mongoerr.New(mongoerr.Location2942502, "$sortArray requires 'input' to be specified")
	}
	if !hasSort {
		return nil, mongoerr.New(mongoerr.Location2942503, "$sortArray requires 'sortBy' to be specified")
	}
	cmp, err := sortArrayOrder(sortArg)
	if err != nil {
		return nil, err
	}
	input, err := Parse(inputArg, s)
	if err != nil {
		return nil, err
	}
	return &opExpr{args: []Expr{input}, fn: func(a []any) (any, error) {
		if nullish(a[0]) {
			return nil, nil
		}
		arr, ok := a[0].(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location2942504, "The input argument to $sortArray must be an array, but was of type: %s", TypeName(a[0]))
		}
		out := slices.Clone(arr)
		slices.SortStableFunc(out, cmp)
		return out, nil
	}}, nil
}

// sortArrayOrder parses sortBy into a comparison of elements.
func sortArrayOrder(v any) (func(a, b any) int, error) {
	badDirection := mongoerr.New(mongoerr.Location2942506, "The $sort element value must be either 1 or -1")
	spec, isDoc := v.(bson.D)
	if !isDoc {
		dir, ok := sortDirection(v)
		if !ok {
			return nil, badDirection
		}
		return func(a, b any) int { return dir * Compare(a, b) }, nil
	}
	if len(spec) == 0 {
		return nil, badDirection
	}
	type sortKey struct {
		parts []string
		dir   int
	}
	keys := make([]sortKey, len(spec))
	for i, e := range spec {
		dir, ok := sortDirection(e.Value)
		if !ok {
			return nil, badDirection
		}
		keys[i] = sortKey{strings.Split(e.Key, "."), dir}
	}
	if _, err := query.ParseSort(spec); err != nil { // the field names
		return nil, err
	}
	return func(a, b any) int {
		for _, k := range keys {
			if c := k.dir * Compare(literalPath(a, k.parts), literalPath(b, k.parts)); c != 0 {
				return c
			}
		}
		return 0
	}, nil
}

// literalPath is the value at parts below v, stepping into documents
// only: nil where the path is missing or meets anything else.
func literalPath(v any, parts []string) any {
	for _, p := range parts {
		d, ok := v.(bson.D)
		if !ok {
			return nil
		}
		if v, ok = field(d, p); !ok {
			return nil
		}
	}
	return v
}

// sortDirection is 1 or -1 given as a number of any type.
func sortDirection(v any) (int, bool) {
	if !isNumber(v) {
		return 0, false
	}
	switch toFloat(v) {
	case 1:
		return 1, true
	case -1:
		return -1, true
	}
	return 0, false
}

type zipExpr struct {
	inputs   []Expr
	defaults []Expr
	longest  bool
}

func parseZip(_ string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34460, "$zip only supports an object as an argument, found %s", TypeName(arg))
	}
	z := &zipExpr{}
	var inputs, defaults bson.A
	for _, e := range d {
		switch e.Key {
		case "inputs":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location34461, "inputs must be an array of expressions, found %s", TypeName(e.Value))
			}
			inputs = a
		case "defaults":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location34462, "defaults must be an array of expressions, found %s", TypeName(e.Value))
			}
			defaults = a
		case "useLongestLength":
			b, ok := e.Value.(bool)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location34463, "useLongestLength must be a bool, found %s", TypeName(e.Value))
			}
			z.longest = b
		default:
			return nil, mongoerr.Newf(mongoerr.Location34464, "$zip found an unknown argument: %s", e.Key)
		}
	}
	// An empty defaults array counts as none, as in MongoDB.
	switch {
	case len(inputs) == 0:
		return nil, mongoerr.New(mongoerr.Location34465, "$zip requires at least one input array")
	case len(defaults) > 0 && !z.longest:
		return nil, mongoerr.New(mongoerr.Location34466, "cannot specify defaults unless useLongestLength is true")
	case len(defaults) > 0 && len(defaults) != len(inputs):
		return nil, mongoerr.New(mongoerr.Location34467, "defaults and inputs must have the same length")
	}
	var err error
	if z.inputs, err = parseList(inputs, s); err != nil {
		return nil, err
	}
	if z.defaults, err = parseList(defaults, s); err != nil {
		return nil, err
	}
	return z, nil
}

func parseList(a bson.A, s *Scope) ([]Expr, error) {
	out := make([]Expr, len(a))
	for i, v := range a {
		e, err := Parse(v, s)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (z *zipExpr) Eval(c *Ctx) (any, error) {
	arrays := make([]bson.A, len(z.inputs))
	size := -1
	for i, e := range z.inputs {
		v, err := e.Eval(c)
		if err != nil {
			return nil, err
		}
		if nullish(v) {
			return nil, nil
		}
		arr, ok := v.(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location34468, "$zip found a non-array expression in input: %s", FormatValue(v))
		}
		arrays[i] = arr
		if size < 0 || (z.longest && len(arr) > size) || (!z.longest && len(arr) < size) {
			size = len(arr)
		}
	}
	defaults := make([]any, len(z.inputs))
	for i, e := range z.defaults {
		v, err := e.Eval(c)
		if err != nil {
			return nil, err
		}
		if IsMissing(v) {
			v = nil
		}
		defaults[i] = v
	}
	out := make(bson.A, size)
	for row := range out {
		tuple := make(bson.A, len(arrays))
		for i, arr := range arrays {
			if row < len(arr) {
				tuple[i] = arr[row]
			} else {
				tuple[i] = defaults[i]
			}
		}
		out[row] = tuple
	}
	return out, nil
}
