package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MatchedPosition returns the array position MongoDB's matcher records
// when doc matches the filter (its "elemMatchKey"), which the positional
// update operator "$" and the positional projection "a.$" use: the index,
// in the first array a condition's path runs through, of the element that
// satisfied it; for an $elemMatch on the array itself, the index of the
// first element it accepted. Conditions under $or, $nor and negations
// record nothing; under an AND the last condition that records one wins.
// ok is false when nothing was recorded. doc should match the filter.
func (f *Filter) MatchedPosition(doc bson.D) (pos string, ok bool) {
	p := -1
	positionDoc(f.root, doc, &p)
	if p < 0 {
		return "", false
	}
	return strconv.Itoa(p), true
}

func positionDoc(x docExpr, doc bson.D, pos *int) {
	switch e := x.(type) {
	case andDoc:
		for _, c := range e {
			positionDoc(c, doc, pos)
		}
	case pathDoc:
		positionField(e.expr, doc, e.parts, pos)
	}
}

func positionField(x fieldExpr, doc bson.D, parts []string, pos *int) {
	switch e := x.(type) {
	case andExpr:
		for _, c := range e {
			positionField(c, doc, parts, pos)
		}
	case leafExpr:
		outer, inner := -1, -1
		ip, indexed := e.pred.(indexedPred)
		matched := walkDocAt(doc, parts, e.mode, &outer, func(v any, missing bool) bool {
			if indexed {
				inner = ip.matchIndex(v, missing)
				return inner >= 0
			}
			return e.pred.match(v, missing)
		})
		switch {
		case !matched:
		case outer >= 0:
			*pos = outer
		case inner >= 0:
			*pos = inner
		}
	}
}

// indexedPred is a predicate on a whole array that can say which element
// satisfied it ($elemMatch).
type indexedPred interface {
	matchIndex(v any, missing bool) int
}

func (p elemMatchDocPred) matchIndex(v any, missing bool) int {
	a, ok := asArray(normalize(v))
	if missing || !ok {
		return -1
	}
	for i, e := range a {
		switch x := normalize(e).(type) {
		case bson.D:
			if p.sub.matchDoc(x) {
				return i
			}
		case bson.A:
			if p.sub.matchDoc(arrayAsDoc(x)) {
				return i
			}
		}
	}
	return -1
}

func (p elemMatchValuePred) matchIndex(v any, missing bool) int {
	a, ok := asArray(normalize(v))
	if missing || !ok {
		return -1
	}
	for i, e := range a {
		if p.sub.matchElem(normalize(e), false) {
			return i
		}
	}
	return -1
}

// ConstrainsField reports whether some condition of the filter, at any
// depth of $and, $or and $nor, is on a path whose first component is
// field: MongoDB's requirement for a positional projection "field....$".
func (f *Filter) ConstrainsField(field string) bool {
	return constrains(f.raw, field)
}

func constrains(filter bson.D, field string) bool {
	for _, e := range filter {
		switch e.Key {
		case "$and", "$or", "$nor":
			a, _ := asArray(normalize(e.Value))
			for _, c := range a {
				if d, ok := asDoc(normalize(c)); ok && constrains(d, field) {
					return true
				}
			}
			continue
		}
		if first, _, _ := strings.Cut(e.Key, "."); first == field {
			return true
		}
	}
	return false
}
