package update

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Apply returns the document that results from applying u to doc, and
// whether it differs from doc in any byte, so that an unchanged document
// need not be written. doc is never modified. isUpsertInsert is true when
// doc is the skeleton of a document an upsert is about to insert; only then
// does $setOnInsert apply.
//
// The result is not checked with ValidateForStorage; callers storing it
// must do so.
func (u *Update) Apply(doc bson.D, isUpsertInsert bool) (bson.D, bool, error) {
	return u.ApplyWith(doc, ApplyParams{Insert: isUpsertInsert})
}

// ApplyParams are the circumstances of one application of an update.
type ApplyParams struct {
	// Insert: doc is the skeleton of a document an upsert is about to
	// insert; only then does $setOnInsert apply.
	Insert bool
	// Matched is the array position the query matched in doc, as
	// query.Filter.MatchedPosition reports it, for "$" paths; "" when it
	// matched none.
	Matched string
}

// ApplyWith is Apply with all its parameters.
func (u *Update) ApplyWith(doc bson.D, p ApplyParams) (bson.D, bool, error) {
	isUpsertInsert := p.Insert
	var out bson.D
	if u.pipeline != nil {
		var err error
		if out, err = u.applyPipeline(doc); err != nil {
			return nil, false, err
		}
	} else if u.isReplacement {
		var err error
		if out, err = u.applyReplacement(doc); err != nil {
			return nil, false, err
		}
	} else {
		root := any(copyDoc(doc))
		if doc == nil {
			root = bson.D{}
		}
		c := &applyCtx{root: &root, orig: doc, now: u.now()}
		ops, err := u.concreteOps(root, isUpsertInsert, p.Matched)
		if err != nil {
			return nil, false, err
		}
		for i := range ops {
			op := &ops[i]
			if op.onInsert && !isUpsertInsert {
				continue
			}
			if err := op.mod.apply(c, op); err != nil {
				return nil, false, err
			}
		}
		out = root.(bson.D)
		if err := u.checkIDKept(doc, out); err != nil {
			return nil, false, err
		}
	}
	return out, !identical(doc, out), nil
}

// checkIDKept enforces that _id, once a document has one, never changes.
func (u *Update) checkIDKept(before, after bson.D) error {
	oldID, had := lookupID(before)
	if !had {
		return nil
	}
	if newID, has := lookupID(after); has && identical(oldID, newID) {
		return nil
	}
	path := "_id"
	for _, op := range u.ops {
		if op.parts[0] == "_id" {
			path = op.path
			break
		}
		if r, ok := op.mod.(*renameMod); ok && r.from[0] == "_id" {
			path = r.fromPath
			break
		}
	}
	return mongoerr.Newf(mongoerr.ImmutableField,
		"Performing an update on the path '%s' would modify the immutable field '_id'", path)
}

// applyReplacement returns the replacement document carrying doc's _id,
// placed first.
func (u *Update) applyReplacement(doc bson.D) (bson.D, error) {
	oldID, had := lookupID(doc)
	newID, has := lookupID(u.replacement)
	if had && has && !identical(oldID, newID) {
		return nil, mongoerr.Newf(mongoerr.ImmutableField,
			"After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s",
			formatValue(newID))
	}
	out := make(bson.D, 0, len(u.replacement)+1)
	switch {
	case has:
		out = append(out, bson.E{Key: "_id", Value: deepCopy(newID)})
	case had:
		out = append(out, bson.E{Key: "_id", Value: deepCopy(oldID)})
	}
	for _, e := range u.replacement {
		if e.Key != "_id" {
			out = append(out, bson.E{Key: e.Key, Value: deepCopy(e.Value)})
		}
	}
	return out, nil
}

// concreteOps returns the ops to apply to root: u.ops themselves unless
// some path is positional, in which case every positional op is expanded
// into one op per concrete path it names, in the order MongoDB applies
// them, and concrete paths of different ops that overlap are refused.
func (u *Update) concreteOps(root any, isUpsertInsert bool, matched string) ([]fieldOp, error) {
	if !u.positional {
		return u.ops, nil
	}
	var all []concreteOp
	for i := range u.ops {
		op := &u.ops[i]
		if op.onInsert && !isUpsertInsert {
			continue
		}
		if !hasPositional(op.parts) {
			all = append(all, concreteOp{op: op, parts: op.parts, template: op.parts})
			continue
		}
		paths, err := u.expand(root, op.parts, matched)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			all = append(all, concreteOp{op: op, parts: p, template: op.parts})
		}
	}
	slices.SortStableFunc(all, func(a, b concreteOp) int { return comparePaths(a.parts, b.parts) })
	seen := map[string]int{} // concrete path -> index in all
	out := make([]fieldOp, len(all))
	for i, c := range all {
		for j := 1; j <= len(c.parts); j++ {
			if k, ok := seen[strings.Join(c.parts[:j], ".")]; ok && all[k].op != c.op {
				return nil, mongoerr.Newf(mongoerr.ConflictingUpdateOperators,
					"Update created a conflict at '%s'", conflictAt(all[k], c))
			}
		}
		seen[strings.Join(c.parts, ".")] = i
		out[i] = *c.op
		out[i].parts = c.parts
		out[i].path = strings.Join(c.parts, ".")
	}
	return out, nil
}
