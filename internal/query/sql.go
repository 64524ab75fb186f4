package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// KeyColumn describes one bytea key column of a collection's table.
type KeyColumn struct {
	// Column is the column's name, already quoted as an SQL identifier.
	Column string
	// Fields are the dotted paths whose keys the column concatenates, in
	// order; "_id" alone for the primary key.
	Fields []string
	// Nullable is true for secondary index columns, which are NULL for
	// multikey documents (see IndexKey): such rows must always be
	// selected, since only Match can judge them.
	Nullable bool
	// Sparse columns hold the empty string for documents missing every
	// indexed field (a sparse index leaves them out): only conditions that
	// cannot match a missing field may use the column.
	Sparse bool
	// Partial, when set, is the index's partialFilterExpression: documents
	// it does not match hold the empty string, so the column serves only
	// filters that imply it.
	Partial *Filter
	// Hashed means the first field's key is HashedKey of its value: only
	// equality ($eq, $in) may use the column.
	Hashed bool
}

// maxInRanges bounds the OR of ranges an $in becomes on a compound column;
// beyond it the $in is not pushed down.
const maxInRanges = 64

// SQL translates the indexable part of the filter into a WHERE condition on
// key columns, a prefilter selecting a superset of the matching rows; every
// row it selects must still go through Match. Pushed down are the top-level
// (and top-level $and) conditions $eq, plain values, $gt, $gte, $lt, $lte
// and $in on a path that is the first field of a column; each becomes plain
// comparisons of the column with key bytes, bounded to the operand's type
// bracket, which btree indexes on bytea serve. On a Nullable column each
// predicate also accepts NULL. Everything else is left to Match; with
// nothing to push the result is "TRUE". Placeholders are numbered from
// $firstArg; args are []byte or [][]byte.
//
// The SQL assumes that a non-nullable column never holds an array's key,
// which MongoDB's rule that _id is not an array guarantees.
func (f *Filter) SQL(cols []KeyColumn, firstArg int) (where string, args []any) {
	var conds []sqlCond
	collectSQLConds(f.raw, &conds)
	b := sqlBuilder{next: firstArg}
	var preds []string
	usable := make([]bool, len(cols))
	for i, col := range cols {
		usable[i] = col.Partial == nil || f.Implies(col.Partial)
	}
	for _, c := range conds {
		for i, col := range cols {
			if len(col.Fields) == 0 || col.Fields[0] != c.path || !usable[i] {
				continue
			}
			if col.Sparse && matchesMissing(c) {
				continue
			}
			var p string
			var ok bool
			if col.Hashed {
				p, ok = b.hashedPred(col, c)
			} else {
				p, ok = b.pred(col, c)
			}
			if !ok {
				continue
			}
			if col.Nullable {
				if p == "FALSE" {
					p = col.Column + " IS NULL"
				} else {
					p = "((" + p + ") OR " + col.Column + " IS NULL)"
				}
			}
			if col.Sparse || col.Partial != nil {
				// The predicate of the PostgreSQL partial index, which
				// leaves out the documents the index does not hold: stated
				// as is, so that the planner sees the index applies.
				p += " AND " + NotIndexedPredicate(col.Column)
			}
			preds = append(preds, p)
		}
	}
	if len(preds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(preds, " AND "), b.args
}

// sqlCond is one AND-ed top-level condition of a pushable kind.
type sqlCond struct {
	path  string
	op    string
	value any
}

func collectSQLConds(filter bson.D, out *[]sqlCond) {
	for _, e := range filter {
		if e.Key == "$and" {
			a, _ := asArray(normalize(e.Value))
			for _, c := range a {
				if d, ok := asDoc(normalize(c)); ok {
					collectSQLConds(d, out)
				}
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") {
			continue
		}
		v := normalize(e.Value)
		if ops, ok := operatorDoc(v); ok {
			for _, op := range ops {
				switch op.Key {
				case "$eq", "$gt", "$gte", "$lt", "$lte", "$in":
					*out = append(*out, sqlCond{path: e.Key, op: op.Key, value: normalize(op.Value)})
				}
			}
			continue
		}
		if _, ok := v.(bson.Regex); ok {
			continue // a regex match, not an equality
		}
		*out = append(*out, sqlCond{path: e.Key, op: "$eq", value: v})
	}
}

type sqlBuilder struct {
	next int
	args []any
}

func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	s := "$" + strconv.Itoa(b.next)
	b.next++
	return s
}

// span is lo <= col < hi; a nil bound is left out.
func (b *sqlBuilder) span(col string, lo, hi []byte) string {
	var parts []string
	if lo != nil {
		parts = append(parts, col+" >= "+b.arg(lo))
	}
	if hi != nil {
		parts = append(parts, col+" < "+b.arg(hi))
	}
	if len(parts) == 0 {
		return "TRUE"
	}
	return strings.Join(parts, " AND ")
}

// pred is the predicate for one condition on a column whose first field is
// the condition's path, or false when the condition cannot be pushed.
//
// A row whose column is not NULL met no array on any indexed path, so the
// matcher sees exactly one value there, or a missing one, which the column
// holds as null. Each predicate selects every such row the condition can
// match; conditions that only arrays can satisfy select no such row.
func (b *sqlBuilder) pred(col KeyColumn, c sqlCond) (string, bool) {
	name := col.Column
	compound := len(col.Fields) > 1
	// equal selects the rows whose first field has key k.
	equal := func(k []byte) string {
		if compound {
			return b.span(name, k, prefixEnd(k))
		}
		return name + " = " + b.arg(k)
	}
	// nullish selects null, undefined and missing: the brackets are
	// adjacent, so one span covers them.
	nullish := func() string {
		return b.span(name, AppendKey(nil, bson.Undefined{}), prefixEnd(AppendKey(nil, nil)))
	}
	arrayOnly := func() (string, bool) {
		if col.Nullable {
			return "FALSE", true
		}
		return "", false
	}

	v := c.value
	br := bracketOf(v)
	switch c.op {
	case "$eq":
		switch br {
		case brNull:
			return nullish(), true
		case brArray:
			return arrayOnly()
		}
		return equal(AppendKey(nil, v)), true
	case "$gt", "$gte", "$lt", "$lte":
		switch br {
		case brMinKey, brMaxKey:
			return "", false // these match across brackets
		case brNull:
			if c.op == "$gte" || c.op == "$lte" {
				return nullish(), true
			}
			return "FALSE", true
		case brArray:
			return arrayOnly()
		}
		k := AppendKey(nil, v)
		first, next := []byte{byte(br)}, []byte{byte(br) + 1}
		switch {
		case c.op == "$gt" && !compound:
			return name + " > " + b.arg(k) + " AND " + name + " < " + b.arg(next), true
		case c.op == "$gt":
			return b.span(name, prefixEnd(k), next), true
		case c.op == "$gte":
			return b.span(name, k, next), true
		case c.op == "$lt":
			return b.span(name, first, k), true
		case !compound:
			return name + " >= " + b.arg(first) + " AND " + name + " <= " + b.arg(k), true
		}
		return b.span(name, first, prefixEnd(k)), true
	case "$in":
		return b.inPred(col, v, equal)
	}
	return "", false
}

func (b *sqlBuilder) inPred(col KeyColumn, v any, equal func([]byte) string) (string, bool) {
	a, _ := asArray(v)
	var keys [][]byte
	for _, x := range a {
		x = normalize(x)
		switch bracketOf(x) {
		case brRegex:
			return "", false
		case brArray:
			if !col.Nullable {
				return "", false
			}
			continue // matches multikey rows only
		case brNull:
			keys = append(keys, AppendKey(nil, bson.Undefined{}))
		}
		keys = append(keys, AppendKey(nil, x))
	}
	if len(keys) == 0 {
		return "FALSE", true
	}
	if len(col.Fields) == 1 {
		return col.Column + " = ANY(" + b.arg(keys) + "::bytea[])", true
	}
	if len(keys) > maxInRanges {
		return "", false
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "(" + equal(k) + ")"
	}
	return "(" + strings.Join(parts, " OR ") + ")", true
}

// NotIndexedPredicate is the WHERE clause of the PostgreSQL index behind a
// sparse or partial index's key column: it leaves out the rows holding the
// empty key (documents the index does not hold) and keeps multikey rows
// (NULL).
func NotIndexedPredicate(column string) string {
	return column + ` IS DISTINCT FROM '\x'::bytea`
}

// matchesMissing reports whether a pushable condition can match a document
// missing the field (a null equality or bound, an $in with null).
func matchesMissing(c sqlCond) bool {
	switch c.op {
	case "$eq", "$gte", "$lte":
		return bracketOf(c.value) == brNull
	case "$in":
		a, _ := asArray(c.value)
		for _, x := range a {
			if bracketOf(normalize(x)) == brNull {
				return true
			}
		}
	}
	return false
}

// hashedPred is the predicate of an equality on a hashed column: its key
// is the value's hash, so only $eq and $in of scalars can be pushed.
func (b *sqlBuilder) hashedPred(col KeyColumn, c sqlCond) (string, bool) {
	var values []any
	switch c.op {
	case "$eq":
		values = []any{c.value}
	case "$in":
		a, _ := asArray(c.value)
		values = a
	default:
		return "", false
	}
	var keys [][]byte
	for _, v := range values {
		v = normalize(v)
		switch bracketOf(v) {
		case brArray, brRegex, brMinKey, brMaxKey:
			return "", false
		case brNull:
			keys = append(keys, HashedKey(bson.Undefined{}))
		}
		keys = append(keys, HashedKey(v))
	}
	if len(keys) == 0 {
		return "FALSE", true
	}
	if len(col.Fields) == 1 {
		return col.Column + " = ANY(" + b.arg(keys) + "::bytea[])", true
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = b.span(col.Column, k, prefixEnd(k))
	}
	return "(" + strings.Join(parts, " OR ") + ")", true
}
