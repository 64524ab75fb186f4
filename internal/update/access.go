package update

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Update paths address one value: a component selects a field of a
// document or, when it is a number, an element of an array. Unlike query
// paths they never fan out over the elements of an array.

// getPath returns the value at parts, if it exists.
func getPath(v any, parts []string) (any, bool) {
	for _, p := range parts {
		switch c := v.(type) {
		case bson.D:
			j := fieldIndex(c, p)
			if j < 0 {
				return nil, false
			}
			v = c[j].Value
		case bson.A:
			i, ok := arrayIndex(p)
			if !ok || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func fieldIndex(d bson.D, key string) int {
	for i, e := range d {
		if e.Key == key {
			return i
		}
	}
	return -1
}

// setPath stores value at parts inside *root, which must be owned by the
// caller. An existing field keeps its position; a missing one is appended
// to its document, with missing intermediate documents created on the way.
// Writing past the end of an array pads it with nulls.
func setPath(root *any, parts []string, value any) error {
	slot := root
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := (*slot).(type) {
		case bson.D:
			j := fieldIndex(c, p)
			if j < 0 {
				if last {
					*slot = append(c, bson.E{Key: p, Value: value})
					return nil
				}
				c = append(c, bson.E{Key: p, Value: bson.D{}})
				*slot = c
				j = len(c) - 1
			}
			slot = &c[j].Value
		case bson.A:
			idx, ok := arrayIndex(p)
			if !ok {
				return notViable(parts[i-1], p, c)
			}
			if idx >= len(c) {
				if idx-len(c) > maxArrayBackfill {
					return mongoerr.Newf(mongoerr.BadValue,
						"can't backfill array to larger than %d elements", maxArrayBackfill)
				}
				c = append(c, make(bson.A, idx+1-len(c))...)
				if !last {
					c[idx] = bson.D{}
				}
				*slot = c
			}
			slot = &c[idx]
		default:
			return notViable(parts[i-1], p, c)
		}
	}
	*slot = value
	return nil
}

// notViable is the error for a path that would have to create a field
// inside a value that cannot hold one. The root is always a document, so
// the offending value always has a parent field name.
func notViable(parent, field string, v any) error {
	return mongoerr.Newf(mongoerr.PathNotViable,
		"Cannot create field '%s' in element %s", field, formatElem(parent, v))
}

// unsetPath removes the field at parts. An array element is set to null
// instead, so that the positions of the other elements do not shift.
// It reports whether anything was there.
func unsetPath(root *any, parts []string) bool {
	parent, ok := getPath(*root, parts[:len(parts)-1])
	if !ok {
		return false
	}
	p := parts[len(parts)-1]
	switch c := parent.(type) {
	case bson.D:
		j := fieldIndex(c, p)
		if j < 0 {
			return false
		}
		return replaceAt(root, parts[:len(parts)-1], append(c[:j:j], c[j+1:]...))
	case bson.A:
		i, ok := arrayIndex(p)
		if !ok || i >= len(c) {
			return false
		}
		c[i] = nil
		return true
	}
	return false
}

// replaceAt overwrites the existing value at parts; it is only called for
// paths known to exist.
func replaceAt(root *any, parts []string, value any) bool {
	return setPath(root, parts, value) == nil
}
