package query

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
