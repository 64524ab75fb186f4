package exec

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// findSortBytes is the memory limit of a find's in-memory sort, MongoDB's
// (a variable for tests).
var findSortBytes = MaxMemoryBytes

// errFindSortMemory is the error of a find's sort past findSortBytes.
func errFindSortMemory() error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimit, "Sort exceeded memory limit of 104857600 bytes; add an index or a limit (tierdb cannot spill sorts to disk)")
}

// sortAll reads every match, sorts it, then applies skip, limit, projection.
// Documents are sorted by their sort values, read from the BSON bytes when
// the sort's paths reach scalars (query.Sort.RawValues), so most are never
// decoded; what it holds counts as the BSON, the values and any decoded
// document, against MongoDB's 100 MB sort limit. With a limit it keeps only
// the first skip+limit documents seen so far (a top-k), so a sort with a
// small limit holds little whatever it reads.
func sortAll(ctx context.Context, on storage.On, scan *scanSource, rs *ReadSpec) (Source, error) {
	scan.raw = true
	type item struct {
		raw  bson.Raw
		vals []any
		seq  int // arrival order (_id order): ties keep it
		mem  int
	}
	var items []item
	total, seq := 0, 0
	less := func(a, b item) int {
		if c := rs.Sort.CompareValues(a.vals, b.vals); c != 0 {
			return c
		}
		return a.seq - b.seq
	}
	keep := 0 // top-k size, 0: everything
	if rs.Limit > 0 {
		keep = int(min(rs.Skip+rs.Limit, 1<<20))
	}
	for {
		batch, done, err := scan.Next(ctx, on, 0)
		if err != nil {
			return nil, err
		}
		for _, raw := range batch {
			vals, ok := rs.Sort.RawValues(raw)
			mem := len(raw) + 16*len(vals) + 64
			if !ok {
				doc, err := bsonx.Decode(raw)
				if err != nil {
					return nil, errCorrupt()
				}
				vals = rs.Sort.Values(doc)
				mem += DocMemory(doc) // its values may be parts of it
			}
			// Its own copy: the scan's rows share blocks that a few kept
			// documents would otherwise pin.
			it := item{raw: append(bson.Raw(nil), raw...), vals: vals, seq: seq, mem: mem}
			seq++
			items = append(items, it)
			total += it.mem
			if keep > 0 && len(items) >= 2*keep+1024 {
				slices.SortFunc(items, less)
				for _, dropped := range items[keep:] {
					total -= dropped.mem
				}
				clear(items[keep:])
				items = items[:keep]
			}
		}
		if total > findSortBytes {
			return nil, errFindSortMemory()
		}
		if done {
			break
		}
	}
	slices.SortFunc(items, less)
	if rs.Skip >= int64(len(items)) {
		items = nil
	} else {
		items = items[rs.Skip:]
	}
	if rs.Limit > 0 && int64(len(items)) > rs.Limit {
		items = items[:rs.Limit]
	}
	out := make([]bson.Raw, len(items))
	for i, it := range items {
		out[i] = it.raw
		if rs.Proj != nil {
			doc, err := bsonx.Decode(it.raw)
			if err != nil {
				return nil, errCorrupt()
			}
			b, err := ProjectRaw(rs.Proj, doc)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	}
	return &SliceSource{Docs: out}, nil
}
