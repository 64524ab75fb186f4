package exec

import (
	"encoding/json"
	"slices"

	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// SortPlan is how an index serves a sort: its key column walked in byte
// order (backwards with desc), ties by _id (backwards with idDesc).
type SortPlan struct {
	index  *storage.Index
	desc   bool
	idDesc bool
	// exact: the walk's order is the in-memory sort's order, ties included
	// (the sort covers every key of the index after the pinned ones). When
	// the sort is a strict prefix of the index, ties come in the order of
	// the index's remaining keys, an order MongoDB also allows.
	exact bool
	// pinned is how many of the index's keys before the sort's the
	// filter pins: they narrow the walk to the filter's range.
	pinned int
}

// better ranks candidates: exact ties first, then the most pinned keys
// (the narrowest walk), then the fewest keys.
func (p SortPlan) better(o SortPlan) bool {
	if p.exact != o.exact {
		return p.exact
	}
	if p.pinned != o.pinned {
		return p.pinned > o.pinned
	}
	return len(p.index.Keys) < len(o.index.Keys)
}

// planIndexSort is the one place that decides whether an index can serve a
// sort by walking its key column, and which index. The key column of a
// document that is not multikey on the index is the concatenation of
// query.AppendKey of its values (a missing field as null), whose byte order
// is query.Compare's order field by field, the order MongoDB sorts by;
// multikey documents (an array on an indexed path) have a NULL column and
// are sorted in memory by the caller, so an array still sorts by its
// smallest (ascending) or largest (descending) element.
//
// An index serves the sort when, after index keys the filter pins to one
// scalar (pinned, from query.Filter.PinnedPaths), its next keys are the
// sort's paths, all in one direction (the column holds ascending keys
// whatever the index's own directions, so {a: 1, b: -1} is served only by
// walking a column whose keys are a then b, never by a mixed walk); a sort
// may end with _id in either direction when it covers the index's keys to
// the end. Only plain indexes qualify (indexServesOrder): a partial,
// sparse, hidden, hashed or text index, or one with any option this
// function does not know, never does. Among candidates the exact ones win,
// then the one using the most pinned keys, then the one with the fewest keys.
func planIndexSort(indexes []storage.Index, s query.Sort, pinned map[string]bool) (SortPlan, bool) {
	fields := s.Fields()
	var idTail *query.SortField
	if n := len(fields); n > 1 && fields[n-1].Path == "_id" {
		idTail, fields = &fields[n-1], fields[:n-1]
	}
	if len(fields) == 0 {
		return SortPlan{}, false
	}
	for _, f := range fields[1:] {
		if f.Desc != fields[0].Desc || f.Path == "_id" {
			return SortPlan{}, false
		}
	}
	var best SortPlan
	found := false
	for i := range indexes {
		ix := &indexes[i]
		if ix.Column == "_id" || !indexServesOrder(ix) {
			continue
		}
		start, ok := sortStart(ix, fields, pinned)
		if !ok {
			continue
		}
		exact := start+len(fields) == len(ix.Keys)
		if idTail != nil && !exact {
			continue
		}
		p := SortPlan{index: ix, desc: fields[0].Desc, exact: exact, pinned: start}
		if idTail != nil {
			p.idDesc = idTail.Desc
		}
		if !found || p.better(best) {
			best, found = p, true
		}
	}
	return best, found
}

// sortStart is where fields begin among ix's keys, every key before them
// pinned by the filter.
func sortStart(ix *storage.Index, fields []query.SortField, pinned map[string]bool) (int, bool) {
	for start := 0; start+len(fields) <= len(ix.Keys); start++ {
		match := true
		for j, f := range fields {
			if ix.Keys[start+j].Field != f.Path {
				match = false
				break
			}
		}
		if match {
			return start, true
		}
		if !pinned[ix.Keys[start].Field] {
			return 0, false
		}
	}
	return 0, false
}

// knownIndexOptions are the fields of a storage.Index (as its catalog JSON
// names them) that leave its key column an exact image of every
// document's values: the name, the keys, uniqueness (which only refuses
// writes), a TTL (which only deletes documents) and the column.
// knownKeyOptions are those of one key. Not listed, so never walked:
// sparse and partial (their column holds an empty key, sorting first, for
// the documents they leave out), hidden (never planned), hashed keys (the
// column holds hashes) and text (a tsvector).
var (
	knownIndexOptions = []string{"name", "keys", "unique", "expireAfterSeconds", "column"}
	knownKeyOptions   = []string{"field", "desc"}
)

// indexServesOrder reports whether walking ix's key column visits every
// document that is not multikey on it, keyed by its values. An option
// that may break that (partialFilterExpression, sparse, hidden, hashed or
// text keys, collation, anything added later) is unknown here until it is
// listed above, so such an index is never used wrongly: any option not in
// the lists with a non-zero value disqualifies the index.
func indexServesOrder(ix *storage.Index) bool {
	raw, err := json.Marshal(ix)
	if err != nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || !onlyKnown(top, knownIndexOptions) {
		return false
	}
	var keys []map[string]json.RawMessage
	if json.Unmarshal(top["keys"], &keys) != nil || len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		if !onlyKnown(k, knownKeyOptions) {
			return false
		}
	}
	return true
}

// onlyKnown reports whether every field of m is known or holds a zero
// value (false, 0, "", null, {} or []), which is how an absent option
// marshals without omitempty.
func onlyKnown(m map[string]json.RawMessage, known []string) bool {
	for k, v := range m {
		if slices.Contains(known, k) {
			continue
		}
		switch string(v) {
		case "false", "0", `""`, "null", "{}", "[]":
		default:
			return false
		}
	}
	return true
}
