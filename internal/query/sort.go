package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Sort is a parsed sort specification. The zero value sorts nothing.
type Sort struct {
	keys []sortKey
}

type sortKey struct {
	path  string
	parts []string
	desc  bool
}

// ParseSort parses a sort specification such as {a: 1, "b.c": -1}. Each
// value must be 1 or -1 of any numeric type; anything else (including
// {$meta: ...}) fails with BadValue. $natural is accepted and ignored:
// tierdb has no natural order to offer beyond whatever storage returns.
func ParseSort(spec bson.D) (Sort, error) {
	var s Sort
	for _, e := range spec {
		if e.Key == "$natural" {
			if _, err := sortDirection(e.Value); err != nil {
				return Sort{}, err
			}
			continue
		}
		if e.Key == "" {
			return Sort{}, badValue("FieldPath cannot be constructed with empty string")
		}
		if strings.HasPrefix(e.Key, "$") {
			return Sort{}, badValue("FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		if strings.HasPrefix(e.Key, ".") || strings.HasSuffix(e.Key, ".") || strings.Contains(e.Key, "..") {
			return Sort{}, badValue("FieldPath field names may not be empty strings.")
		}
		desc, err := sortDirection(e.Value)
		if err != nil {
			return Sort{}, err
		}
		s.keys = append(s.keys, sortKey{path: e.Key, parts: splitPath(e.Key), desc: desc})
	}
	return s, nil
}

func sortDirection(v any) (desc bool, err error) {
	v = normalize(v)
	if bracketOf(v) == brNumber {
		switch {
		case Compare(v, int32(1)) == 0:
			return false, nil
		case Compare(v, int32(-1)) == 0:
			return true, nil
		}
	}
	return false, badValue("$sort key ordering must be 1 (for ascending) or -1 (for descending)")
}

// IsEmpty reports whether the sort orders nothing.
func (s Sort) IsEmpty() bool { return len(s.keys) == 0 }

// ByIDOnly reports whether the sort is exactly {_id: 1} or {_id: -1}, which
// storage can answer with ORDER BY on its _id key column.
func (s Sort) ByIDOnly() (ascending bool, ok bool) {
	if len(s.keys) != 1 || s.keys[0].path != "_id" {
		return false, false
	}
	return !s.keys[0].desc, true
}

// Compare orders two documents by the sort, MongoDB's way: a missing field
// sorts as null; when a path reaches several values (arrays), ascending
// order uses the smallest, descending the largest; an empty array sorts
// below null. Documents equal on every key compare 0 (callers wanting a
// stable order should use a stable sort).
func (s Sort) Compare(a, b bson.D) int {
	for _, k := range s.keys {
		c := Compare(sortValue(a, k), sortValue(b, k))
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// sortValue is the value by which doc sorts on k.
func sortValue(doc bson.D, k sortKey) any {
	var best any
	found := false
	walkDoc(doc, k.parts, leafElems, func(v any, missing bool) bool {
		if missing {
			v = nil
		}
		if !found {
			best, found = v, true
			return false
		}
		c := Compare(v, best)
		if (k.desc && c > 0) || (!k.desc && c < 0) {
			best = v
		}
		return false
	})
	return best
}
