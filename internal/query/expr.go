package query

import (
	"regexp"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A parsed filter is a tree of docExprs (conditions on a whole document)
// whose leaves are fieldExprs on a path. A fieldExpr can be asked about a
// path in a document, where arrays fan out, or about one element, which is
// how $elemMatch's value form applies its operators to each array element.

type docExpr interface {
	matchDoc(doc bson.D) bool
}

type fieldExpr interface {
	matchPath(doc bson.D, parts []string) bool
	matchElem(v any, missing bool) bool
}

type andDoc []docExpr

func (a andDoc) matchDoc(doc bson.D) bool {
	for _, x := range a {
		if !x.matchDoc(doc) {
			return false
		}
	}
	return true
}

type orDoc []docExpr

func (o orDoc) matchDoc(doc bson.D) bool {
	for _, x := range o {
		if x.matchDoc(doc) {
			return true
		}
	}
	return false
}

type norDoc []docExpr

func (n norDoc) matchDoc(doc bson.D) bool {
	return !orDoc(n).matchDoc(doc)
}

type constDoc bool

func (c constDoc) matchDoc(bson.D) bool { return bool(c) }

type pathDoc struct {
	parts []string
	expr  fieldExpr
}

func (p pathDoc) matchDoc(doc bson.D) bool { return p.expr.matchPath(doc, p.parts) }

// leafExpr applies a per-element predicate to what a path reaches: it
// matches when any reached element does.
type leafExpr struct {
	pred elemPred
	mode leafMode
}

type elemPred interface {
	match(v any, missing bool) bool
}

func (l leafExpr) matchPath(doc bson.D, parts []string) bool {
	return walkDoc(doc, parts, l.mode, l.pred.match)
}

func (l leafExpr) matchElem(v any, missing bool) bool { return l.pred.match(v, missing) }

// notExpr negates over the whole path: {a: {$ne: 1}} rejects [1, 2].
type notExpr struct{ x fieldExpr }

func (n notExpr) matchPath(doc bson.D, parts []string) bool { return !n.x.matchPath(doc, parts) }
func (n notExpr) matchElem(v any, missing bool) bool        { return !n.x.matchElem(v, missing) }

type andExpr []fieldExpr

func (a andExpr) matchPath(doc bson.D, parts []string) bool {
	for _, x := range a {
		if !x.matchPath(doc, parts) {
			return false
		}
	}
	return true
}

func (a andExpr) matchElem(v any, missing bool) bool {
	for _, x := range a {
		if !x.matchElem(v, missing) {
			return false
		}
	}
	return true
}

type cmpOp int

const (
	opEQ cmpOp = iota
	opLT
	opLTE
	opGT
	opGTE
)

// cmpPred is $eq, $lt, $lte, $gt, $gte (and a plain value): only values of
// the operand's bracket match, with MongoDB's exceptions for null versus
// undefined or missing and for MinKey and MaxKey operands.
type cmpPred struct {
	op     cmpOp
	rhs    any
	rb     bracket
	rhsNaN bool
}

func newCmpPred(op cmpOp, rhs any) cmpPred {
	rhs = normalize(rhs)
	return cmpPred{op: op, rhs: rhs, rb: bracketOf(rhs), rhsNaN: isNaNValue(rhs)}
}

func (p cmpPred) match(v any, missing bool) bool {
	vb := brUndefined // a missing value compares like undefined
	if !missing {
		v = normalize(v)
		vb = bracketOf(v)
	}
	if vb != p.rb {
		if (vb == brUndefined && p.rb == brNull) || (vb == brNull && p.rb == brUndefined) {
			return p.op == opEQ || p.op == opLTE || p.op == opGTE
		}
		switch p.rb {
		case brMaxKey:
			return p.op == opLT || p.op == opLTE
		case brMinKey:
			return p.op == opGT || p.op == opGTE
		}
		return false
	}
	if p.op != opEQ {
		// NaN equals NaN but is neither above nor below anything.
		if lnan := isNaNValue(v); lnan || p.rhsNaN {
			return (p.op == opLTE || p.op == opGTE) && lnan && p.rhsNaN
		}
	}
	c := Compare(v, p.rhs)
	switch p.op {
	case opLT:
		return c < 0
	case opLTE:
		return c <= 0
	case opGT:
		return c > 0
	case opGTE:
		return c >= 0
	}
	return c == 0
}

// inPred is $in: equality with any listed value (null also matching
// undefined and missing), or a match of any listed regex.
type inPred struct {
	values  []any // sorted by Compare
	hasNull bool
	regexes []regexPred
}

func newInPred(values []any, regexes []regexPred) inPred {
	p := inPred{regexes: regexes}
	for _, v := range values {
		v = normalize(v)
		if v == nil {
			p.hasNull = true
		}
		p.values = append(p.values, v)
	}
	sort.SliceStable(p.values, func(i, j int) bool { return Compare(p.values[i], p.values[j]) < 0 })
	return p
}

func (p inPred) match(v any, missing bool) bool {
	if missing {
		return p.hasNull
	}
	v = normalize(v)
	if _, ok := v.(bson.Undefined); ok && p.hasNull {
		return true
	}
	i := sort.Search(len(p.values), func(i int) bool { return Compare(p.values[i], v) >= 0 })
	if i < len(p.values) && Compare(p.values[i], v) == 0 {
		return true
	}
	for _, r := range p.regexes {
		if r.match(v, false) {
			return true
		}
	}
	return false
}

type existsPred struct{}

func (existsPred) match(_ any, missing bool) bool { return !missing }

// typePred is $type: any of the listed BSON type numbers, or any number.
type typePred struct {
	codes  []int
	number bool
}

func (p typePred) match(v any, missing bool) bool {
	if missing {
		return false
	}
	v = normalize(v)
	if p.number && bracketOf(v) == brNumber {
		return true
	}
	c := typeCode(v)
	for _, x := range p.codes {
		if x == c {
			return true
		}
	}
	return false
}

type sizePred struct{ n int }

func (p sizePred) match(v any, missing bool) bool {
	a, ok := asArray(normalize(v))
	return !missing && ok && len(a) == p.n
}

// regexPred matches strings and symbols against the pattern, and regex
// values that are the same pattern with the same options.
type regexPred struct {
	re      *regexp.Regexp
	pattern string
	options string
}

func (p regexPred) match(v any, missing bool) bool {
	if missing {
		return false
	}
	switch x := normalize(v).(type) {
	case string:
		return p.re.MatchString(x)
	case bson.Symbol:
		return p.re.MatchString(string(x))
	case bson.Regex:
		return x.Pattern == p.pattern && x.Options == p.options
	}
	return false
}

type modPred struct{ divisor, remainder int64 }

func (p modPred) match(v any, missing bool) bool {
	if missing {
		return false
	}
	n, ok := truncToInt64(normalize(v))
	// Go's % truncates like C++'s and yields 0 for MinInt64 % -1.
	return ok && n%p.divisor == p.remainder
}

// elemMatchDocPred is $elemMatch with conditions on the elements' fields:
// some element that is a document (or an array, seen as one) matches.
type elemMatchDocPred struct{ sub docExpr }

func (p elemMatchDocPred) match(v any, missing bool) bool {
	a, ok := asArray(normalize(v))
	if missing || !ok {
		return false
	}
	for _, e := range a {
		switch x := normalize(e).(type) {
		case bson.D:
			if p.sub.matchDoc(x) {
				return true
			}
		case bson.A:
			if p.sub.matchDoc(arrayAsDoc(x)) {
				return true
			}
		}
	}
	return false
}

// elemMatchValuePred is $elemMatch with operators: some element satisfies
// all of them.
type elemMatchValuePred struct{ sub fieldExpr }

func (p elemMatchValuePred) match(v any, missing bool) bool {
	a, ok := asArray(normalize(v))
	if missing || !ok {
		return false
	}
	for _, e := range a {
		if p.sub.matchElem(normalize(e), false) {
			return true
		}
	}
	return false
}
