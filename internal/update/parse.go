package update

import (
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Update is a parsed update document: either a list of operator
// modifications or a replacement document. It is immutable once parsed and
// may be applied to any number of documents, concurrently.
type Update struct {
	replacement   bson.D
	isReplacement bool
	// ops are sorted by path (see comparePaths) so that applying them in
	// order creates new fields in MongoDB's order.
	ops []fieldOp
	now func() time.Time
	// positional: some op's path has "$", "$[]" or "$[<id>]".
	positional bool
	// matchPosition: some op's path has "$", so Apply needs the array
	// position the query matched.
	matchPosition bool
	filters       map[string]*arrayFilter
	// pipeline is set for a pipeline-style update (see FromPipeline).
	pipeline Pipeline
}

// Options tunes Parse.
type Options struct {
	// Now is the clock used by $currentDate; time.Now when nil.
	Now func() time.Time
	// ArrayFilters is the statement's arrayFilters option, the filters
	// "$[<identifier>]" paths name; nil when absent.
	ArrayFilters bson.A
}

// fieldOp is one modification of one path, e.g. the "a.b" entry of a $set.
type fieldOp struct {
	op    string // operator name, for messages
	path  string
	parts []string
	mod   modifier
	// onInsert marks $setOnInsert, applied only when an upsert inserts.
	onInsert bool
}

// modifier is the behaviour of one operator on one path.
type modifier interface {
	apply(c *applyCtx, op *fieldOp) error
}

// applyCtx is the state of one Apply call.
type applyCtx struct {
	root *any   // the copy being modified; always holds a bson.D
	orig bson.D // the input document, for error messages
	now  time.Time
}

// Parse parses an update document with default options.
func Parse(u any) (*Update, error) {
	return ParseWithOptions(u, Options{})
}

// ParseWithOptions parses an update document: a document whose keys are
// all update operators, or a replacement document whose keys are all plain
// field names. Every operator argument is validated here, so malformed
// updates fail even when they match no document, as in MongoDB.
func ParseWithOptions(u any, opts Options) (*Update, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var d bson.D
	switch x := u.(type) {
	case bson.D:
		d = x
	case bson.Raw:
		if err := bson.Unmarshal(x, &d); err != nil {
			return nil, &mongoerr.Error{Code: mongoerr.InvalidBSON, Msg: "invalid update document", Cause: err}
		}
	case bson.A:
		// Pipelines need the expression language: callers compile them
		// with exec and wrap them with FromPipeline.
		return nil, mongoerr.New(mongoerr.InternalError, "pipeline-style updates are compiled by exec, see FromPipeline")
	default:
		return nil, mongoerr.Newf(mongoerr.TypeMismatch,
			"Update argument must be either an object or an array, not %s", query.TypeName(u))
	}

	if len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
		for _, e := range d {
			if strings.HasPrefix(e.Key, "$") {
				return nil, mongoerr.Newf(mongoerr.DollarPrefixedFieldName,
					"The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. "+
						"Consider using an aggregation pipeline with $replaceWith.", e.Key, e.Key)
			}
		}
		return &Update{replacement: copyDoc(d), isReplacement: true, now: now}, nil
	}

	filters, err := parseArrayFilters(opts.ArrayFilters)
	if err != nil {
		return nil, err
	}
	res := &Update{now: now, filters: filters}
	seen := newPathSet()
	for _, e := range d {
		parse, ok := operatorParser(e.Key)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.FailedToParse,
				"Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", e.Key)
		}
		fields, ok := e.Value.(bson.D)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.FailedToParse,
				"Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s: %s}",
				query.TypeName(e.Value), e.Key, formatValue(e.Value))
		}
		for _, f := range fields {
			parts, err := splitUpdatePath(f.Key)
			if err != nil {
				return nil, err
			}
			op := fieldOp{op: e.Key, path: f.Key, parts: parts, onInsert: e.Key == "$setOnInsert"}
			if hasPositional(parts) {
				if e.Key == "$rename" {
					return nil, mongoerr.Newf(mongoerr.BadValue, "The source field for $rename may not be dynamic: %s", f.Key)
				}
				if err := checkPositionalPath(f.Key, parts, filters); err != nil {
					return nil, err
				}
				res.positional = true
				res.matchPosition = res.matchPosition || slices.Contains(parts, "$")
			}
			if e.Key == "$rename" {
				// A rename touches two paths; both take part in conflict
				// detection, and the op lives at its destination.
				if op, err = parseRename(f.Key, parts, f.Value); err != nil {
					return nil, err
				}
				if err := seen.add(f.Key, parts); err != nil {
					return nil, err
				}
			} else if op.mod, err = parse(f.Key, f.Value); err != nil {
				return nil, err
			}
			if err := seen.add(op.path, op.parts); err != nil {
				return nil, err
			}
			res.ops = append(res.ops, op)
		}
	}
	for _, f := range filters {
		if !f.used {
			return nil, mongoerr.Newf(mongoerr.FailedToParse,
				"The array filter for identifier '%s' was not used in the update %s", f.id, formatValue(d))
		}
	}
	slices.SortStableFunc(res.ops, func(a, b fieldOp) int { return comparePaths(a.parts, b.parts) })
	return res, nil
}

// NeedsMatchPosition reports whether applying the update needs the array
// position its query matched (a "$" path): see ApplyParams.Matched.
func (u *Update) NeedsMatchPosition() bool { return u.matchPosition }

// operatorParser returns the argument parser of an update operator.
func operatorParser(name string) (func(path string, arg any) (modifier, error), bool) {
	switch name {
	case "$set", "$setOnInsert":
		return parseSet, true
	case "$unset":
		return parseUnset, true
	case "$inc":
		return parseInc, true
	case "$mul":
		return parseMul, true
	case "$min":
		return parseMin, true
	case "$max":
		return parseMax, true
	case "$currentDate":
		return parseCurrentDate, true
	case "$push":
		return parsePush, true
	case "$addToSet":
		return parseAddToSet, true
	case "$pop":
		return parsePop, true
	case "$pull":
		return parsePull, true
	case "$pullAll":
		return parsePullAll, true
	case "$bit":
		return parseBit, true
	case "$rename":
		// Handled by parseRename, which needs more than the argument.
		return nil, true
	}
	return nil, false
}

// IsReplacement reports whether the update is a replacement document
// rather than a list of operators.
func (u *Update) IsReplacement() bool { return u.isReplacement }
