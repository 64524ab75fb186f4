package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// hint, on find, count, distinct, aggregate, findAndModify and each update
// or delete statement, is checked as MongoDB checks it: an index name or
// key pattern naming no index of the collection, or only a hidden one, is
// BadValue; {$natural: ±1} and an empty hint name no index and pass. A
// valid hint stays advisory: PostgreSQL plans the query (the result is
// the same, except that MongoDB would return only the documents a hinted
// sparse or partial index holds). A collection that does not exist (or a
// view) is not checked, as MongoDB answers its reads empty.

// hintCommands are the commands whose top-level hint is checked.
var hintCommands = map[string]bool{"find": true, "count": true, "distinct": true, "aggregate": true, "findAndModify": true}

// checkCommandHint checks the command's top-level hint (run calls it).
func (h *Handlers) checkCommandHint(ctx context.Context, req *Request) error {
	cmd, cmdName := req.Cmd, req.Name
	if cmdName == "explain" {
		// The explained command's hint, as it would run.
		inner, ok := cmd[0].Value.(bson.D)
		if !ok || len(inner) == 0 {
			return nil
		}
		cmd, cmdName = inner, inner[0].Key
	}
	if !hintCommands[cmdName] {
		return nil
	}
	hint, ok := lookup(cmd, "hint")
	if !ok || noHint(hint) {
		return nil
	}
	if err := hintType(hint); err != nil {
		return err
	}
	name, ok := cmd[0].Value.(string)
	if !ok {
		return nil
	}
	col, err := h.store.Collection(ctx, req.on, req.DB, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return checkHint(col, hint)
}

// checkStatementHint checks an update or delete statement's hint against
// col (nil: the collection does not exist).
func checkStatementHint(col *storage.Collection, stmt bson.D) error {
	hint, ok := lookup(stmt, "hint")
	if !ok || noHint(hint) {
		return nil
	}
	if err := hintType(hint); err != nil {
		return err
	}
	if col == nil {
		return nil
	}
	return checkHint(col, hint)
}

// noHint is a hint that asks for nothing: null, "" or {}.
func noHint(hint any) bool {
	switch x := hint.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bson.D:
		return len(x) == 0
	}
	return false
}

func hintType(hint any) error {
	switch hint.(type) {
	case string, bson.D:
		return nil
	}
	return mongoerr.Newf(mongoerr.FailedToParse, "hint must be a string or an object, not %s", query.TypeName(hint))
}

// checkHint refuses a hint that names no visible index of col, and one
// that names a sparse or partial index (whose answer tierdb does not give).
func checkHint(col *storage.Collection, hint any) error {
	if d, ok := hint.(bson.D); ok && len(d) == 1 && d[0].Key == "$natural" {
		if n, isNum := asNumber(d[0].Value); isNum && (n == 1 || n == -1) {
			return nil
		}
		return mongoerr.New(mongoerr.BadValue, "$natural hint must be 1 or -1")
	}
	for i := range col.Indexes {
		ix := &col.Indexes[i]
		if !hintNames(ix, hint) {
			continue
		}
		switch {
		case ix.Hidden:
			continue
		case ix.Sparse || ix.Partial != nil:
			// MongoDB would answer only the documents the index holds;
			// tierdb's advisory hint would answer every match.
			return mongoerr.Newf(mongoerr.NotImplemented, "a hint to the sparse or partial index %q is not supported by tierdb", ix.Name)
		}
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "hint provided does not correspond to an existing index")
}

// hintNames reports whether hint is ix's name or key pattern.
func hintNames(ix *storage.Index, hint any) bool {
	switch x := hint.(type) {
	case string:
		return x == ix.Name
	case bson.D:
		key := keyPattern(ix)
		if len(key) != len(x) {
			return false
		}
		for i, k := range key {
			if k.Key != x[i].Key {
				return false
			}
			if s, isStr := k.Value.(string); isStr {
				if v, ok := x[i].Value.(string); !ok || v != s {
					return false
				}
				continue
			}
			want, _ := asNumber(k.Value)
			got, isNum := asNumber(x[i].Value)
			if !isNum || got != want {
				return false
			}
		}
		return true
	}
	return false
}
