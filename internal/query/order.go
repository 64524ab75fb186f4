package query

import "go.mongodb.org/mongo-driver/v2/bson"

// SortField is one key of a sort: a dotted path and its direction.
type SortField struct {
	Path string
	Desc bool
}

// Fields lists the sort's keys in order ($natural left out).
func (s Sort) Fields() []SortField {
	out := make([]SortField, len(s.keys))
	for i, k := range s.keys {
		out[i] = SortField{Path: k.path, Desc: k.desc}
	}
	return out
}

// PinnedPaths returns the top-level paths that the filter pins to one
// scalar value (a plain value or $eq of a number other than NaN, a string,
// an ObjectId, a bool, a date, a timestamp or binary data, see
// Equalities): every matching document whose value at the path is not an
// array holds a value equal to it, with one and the same index key
// (AppendKey). Null (which also matches missing), documents, arrays and
// regexes are left out, as their matching is more than key equality.
func (f *Filter) PinnedPaths() map[string]bool {
	out := map[string]bool{}
	for _, e := range f.Equalities() {
		v := normalize(e.Value)
		switch bracketOf(v) {
		case brNumber:
			if isNaNValue(v) {
				continue
			}
		case brString:
			if _, ok := v.(string); !ok {
				continue // symbols and the like
			}
		case brObjectID, brBool, brDate, brTimestamp, brBinary:
		default:
			continue
		}
		out[e.Key] = true
	}
	return out
}

// Values are the values doc sorts by, one per key (see Compare).
func (s Sort) Values(doc bson.D) []any {
	out := make([]any, len(s.keys))
	for i, k := range s.keys {
		out[i] = sortValue(doc, k)
	}
	return out
}

// RawValues are Values read from a document's BSON bytes without decoding
// it; ok is false when a key's path reaches an array or ends at a
// document, which only Values on the decoded document can answer.
func (s Sort) RawValues(raw []byte) (vals []any, ok bool) {
	out := make([]any, len(s.keys))
	for i, k := range s.keys {
		v, missing, ok := rawLeaf(bson.Raw(raw), k.parts)
		if !ok {
			return nil, false
		}
		if !missing {
			out[i] = v
		}
	}
	return out, true
}

// CompareValues is Compare on what Values (or RawValues) returned.
func (s Sort) CompareValues(a, b []any) int {
	for i, k := range s.keys {
		c := Compare(a[i], b[i])
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}
