package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func splitPath(path string) []string {
	return strings.Split(path, ".")
}

// field is the value of the first field called name, as MongoDB reads
// documents with duplicate names.
func field(d bson.D, name string) (any, bool) {
	for _, e := range d {
		if e.Key == name {
			return e.Value, true
		}
	}
	return nil, false
}

// Lookup finds the value at a dotted path without fanning out: each
// component names a field of a document, or, when it is a number, an element
// of an array ("a.0.b"). It reports false when the path is missing, runs
// through a scalar, or would have to fan out over an array's elements.
func Lookup(doc bson.D, path string) (any, bool) {
	var cur any = doc
	for _, p := range splitPath(path) {
		switch x := normalize(cur).(type) {
		case bson.D:
			v, ok := field(x, p)
			if !ok {
				return nil, false
			}
			cur = v
		case bson.A:
			i, ok := arrayIndex(p)
			if !ok || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// LookupAll returns every value a dotted path reaches the way MongoDB reads
// paths for matching: a component meeting an array of documents applies to
// each element (as well as indexing the array when it is a number), so
// {"a.b"} reaches 1 and 2 in {a: [{b: 1}, {b: 2}]}. A value that is itself
// an array is returned whole, not expanded; missing positions are left out.
func LookupAll(doc bson.D, path string) []any {
	var out []any
	walkDoc(doc, splitPath(path), leafWhole, func(v any, missing bool) bool {
		if !missing {
			out = append(out, v)
		}
		return false
	})
	return out
}

// arrayIndex parses a path component as an array position: digits only, no
// leading zeros ("01" never names element 1).
func arrayIndex(p string) (int, bool) {
	if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(p)
	return i, err == nil
}

// leafMode says what a walk yields when the path ends at an array.
type leafMode int

const (
	// leafExpand yields each element, then the array itself: what equality
	// and the other per-value operators see.
	leafExpand leafMode = iota
	// leafWhole yields the array only: $size and $elemMatch.
	leafWhole
	// leafElems yields the elements only, an empty array yielding
	// undefined: how MongoDB builds sort keys.
	leafElems
)

// visitFn receives each element a walk reaches; missing stands for a path
// that ends early (MongoDB's EOO), which null equality and $exists care
// about. Returning true stops the walk.
type visitFn func(v any, missing bool) bool

// walkDoc yields the elements that MongoDB's matcher sees for a path,
// following its path iterator: documents are descended; an array met before
// the last component fans out over its documents (and is indexed when the
// next component is a number); scalars and nested arrays in such an array
// yield nothing; a path that ends early yields one missing element. It
// reports whether fn stopped it.
func walkDoc(doc bson.D, parts []string, mode leafMode, fn visitFn) bool {
	return walkDocAt(doc, parts, mode, nil, fn)
}

// walkDocAt is walkDoc that, when outer is not nil, keeps in *outer the
// index, in the first array the path runs through, of the element being
// visited (-1 while none, or when visiting that array whole).
func walkDocAt(doc bson.D, parts []string, mode leafMode, outer *int, fn visitFn) bool {
	cur := doc
	for i, p := range parts {
		v, found := field(cur, p)
		if !found {
			return fn(nil, true)
		}
		v = normalize(v)
		last := i == len(parts)-1
		switch x := v.(type) {
		case bson.D:
			if last {
				return fn(x, false)
			}
			cur = x
		case bson.A:
			return walkArray(x, parts[i+1:], mode, outer, fn)
		default:
			if last {
				return fn(v, false)
			}
			return fn(nil, true)
		}
	}
	return false
}

// walkArray walks rest from an array; outer, when not nil, is set to the
// index of the element being visited and to -1 for the array whole.
func walkArray(arr bson.A, rest []string, mode leafMode, outer *int, fn visitFn) bool {
	at := func(i int) {
		if outer != nil {
			*outer = i
		}
	}
	if len(rest) == 0 {
		switch mode {
		case leafWhole:
			return fn(arr, false)
		case leafElems:
			if len(arr) == 0 {
				return fn(bson.Undefined{}, false)
			}
		}
		for i, e := range arr {
			at(i)
			if fn(normalize(e), false) {
				return true
			}
		}
		at(-1)
		return mode == leafExpand && fn(arr, false)
	}
	idx, isIndex := arrayIndex(rest[0])
	for i, e := range arr {
		at(i)
		if walkElem(normalize(e), isIndex && i == idx, rest, mode, fn) {
			return true
		}
	}
	at(-1)
	return false
}

// walkElem walks rest from one element of an array met before the path's
// end; offset says the next component is the element's own index.
func walkElem(e any, offset bool, rest []string, mode leafMode, fn visitFn) bool {
	switch x := e.(type) {
	case bson.D:
		if walkDoc(x, rest, mode, fn) {
			return true
		}
		if offset {
			if len(rest) == 1 {
				return fn(x, false)
			}
			return walkDoc(x, rest[1:], mode, fn)
		}
	case bson.A:
		if offset {
			if len(rest) == 1 {
				return fn(x, false)
			}
			return walkArray(x, rest[1:], mode, nil, fn)
		}
	default:
		return offset && len(rest) == 1 && fn(x, false)
	}
	return false
}
