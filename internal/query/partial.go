package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// CheckPartialFilter refuses a partialFilterExpression MongoDB refuses:
// only equalities (plain values or $eq), $exists: true, $gt, $gte, $lt,
// $lte, $type and $in on fields, combined with $and and $or, are allowed
// (CannotCreateIndex, 67). It must also parse as a filter.
func CheckPartialFilter(filter bson.D) error {
	if err := checkPartial(filter, 0); err != nil {
		return err
	}
	_, err := ParseFilter(filter)
	return err
}

func checkPartial(filter bson.D, depth int) error {
	unsupported := func(what string) error {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification: partialFilterExpression: Expression not supported in partial index: %s", what)
	}
	if depth > 4 {
		return unsupported("nesting too deep")
	}
	for _, e := range filter {
		switch e.Key {
		case "$and", "$or":
			a, ok := asArray(normalize(e.Value))
			if !ok || len(a) == 0 {
				return mongoerr.Newf(mongoerr.BadValue, "%s must be a nonempty array", e.Key)
			}
			for _, c := range a {
				d, ok := asDoc(normalize(c))
				if !ok {
					return mongoerr.Newf(mongoerr.BadValue, "%s argument's entries must be objects", e.Key)
				}
				if err := checkPartial(d, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") {
			return unsupported(e.Key)
		}
		v := normalize(e.Value)
		if _, ok := v.(bson.Regex); ok {
			return unsupported(e.Key + " regex")
		}
		ops, ok := operatorDoc(v)
		if !ok {
			continue // an equality
		}
		for _, op := range ops {
			switch op.Key {
			case "$eq", "$gt", "$gte", "$lt", "$lte", "$type", "$in":
				if _, ok := normalize(op.Value).(bson.Regex); ok {
					return unsupported(e.Key + " " + op.Key + " regex")
				}
			case "$exists":
				if !truthy(normalize(op.Value)) {
					return unsupported("$not " + e.Key + " $exists")
				}
			default:
				return unsupported(e.Key + " " + op.Key)
			}
		}
	}
	return nil
}

// Implies reports whether every document f matches also matches p, judged
// conservatively from their top-level conditions: each condition of p
// (ANDed, $and flattened) must follow from one condition of f on the same
// path. It is how a partial index is chosen: only when the query implies
// the index's filter (false is always safe: the index is then not used).
func (f *Filter) Implies(p *Filter) bool {
	need, ok := impliedConds(p.raw)
	if !ok {
		return false
	}
	have, _ := impliedConds(f.raw)
	for _, n := range need {
		found := false
		for _, h := range have {
			if h.path == n.path && condImplies(h, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// impliedConds lists the top-level ANDed conditions; ok is false when some
// condition is of a kind Implies cannot reason about ($or, $not, ...). For
// the query side those are just left out.
func impliedConds(filter bson.D) (out []sqlCond, ok bool) {
	ok = true
	for _, e := range filter {
		if e.Key == "$and" {
			a, _ := asArray(normalize(e.Value))
			for _, c := range a {
				d, isDoc := asDoc(normalize(c))
				if !isDoc {
					ok = false
					continue
				}
				sub, subOK := impliedConds(d)
				out = append(out, sub...)
				ok = ok && subOK
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") {
			ok = false
			continue
		}
		v := normalize(e.Value)
		if _, isRegex := v.(bson.Regex); isRegex {
			ok = false
			continue
		}
		ops, isOps := operatorDoc(v)
		if !isOps {
			out = append(out, sqlCond{path: e.Key, op: "$eq", value: v})
			continue
		}
		for _, op := range ops {
			switch op.Key {
			case "$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$type":
				ov := normalize(op.Value)
				if _, isRegex := ov.(bson.Regex); isRegex {
					ok = false
					continue
				}
				out = append(out, sqlCond{path: e.Key, op: op.Key, value: ov})
			case "$exists":
				if truthy(normalize(op.Value)) {
					out = append(out, sqlCond{path: e.Key, op: "$exists", value: true})
				} else {
					ok = false
				}
			default:
				ok = false
			}
		}
	}
	return out, ok
}

// condImplies reports whether every value satisfying h satisfies n (both on
// the same path). With arrays, a condition holds when some element does:
// the element satisfying h then satisfies n, so the rule carries over.
func condImplies(h, n sqlCond) bool {
	// values lists what h pins the field to, for $eq and $in.
	var values []any
	switch h.op {
	case "$eq":
		values = []any{h.value}
	case "$in":
		a, _ := asArray(h.value)
		for _, x := range a {
			x = normalize(x)
			if _, isRegex := x.(bson.Regex); isRegex {
				return false
			}
			values = append(values, x)
		}
		if len(values) == 0 {
			return false
		}
	}
	if values != nil {
		for _, v := range values {
			if !valueSatisfies(v, n) {
				return false
			}
		}
		return true
	}
	switch n.op {
	case "$exists":
		switch h.op {
		case "$exists":
			return true
		case "$gt", "$gte", "$lt", "$lte":
			br := bracketOf(h.value)
			return br != brNull && br != brUndefined && br != brMinKey && br != brMaxKey && !isNaNValue(h.value)
		case "$type":
			return Compare(h.value, "null") != 0 && Compare(h.value, int32(10)) != 0 && Compare(h.value, "undefined") != 0 && Compare(h.value, int32(6)) != 0
		}
		return false
	case "$type":
		return h.op == "$type" && Compare(h.value, n.value) == 0 && bracketOf(h.value) == bracketOf(n.value)
	case "$gt", "$gte", "$lt", "$lte":
		if bracketOf(h.value) != bracketOf(n.value) || !rangeBracket(n.value) || isNaNValue(h.value) {
			return false
		}
		c := Compare(h.value, n.value)
		switch {
		case (n.op == "$gt" || n.op == "$gte") && (h.op == "$gt" || h.op == "$gte"):
			// h: x > w (or >=); n: x > v (or >=).
			return c > 0 || (c == 0 && (n.op == "$gte" || h.op == "$gt"))
		case (n.op == "$lt" || n.op == "$lte") && (h.op == "$lt" || h.op == "$lte"):
			return c < 0 || (c == 0 && (n.op == "$lte" || h.op == "$lt"))
		}
	}
	return false
}

// rangeBracket: comparisons with these values stay within their bracket.
func rangeBracket(v any) bool {
	switch bracketOf(v) {
	case brNull, brUndefined, brMinKey, brMaxKey, brArray, brObject, brRegex:
		return false
	}
	return !isNaNValue(v)
}

// valueSatisfies reports whether a field holding exactly v (or an array
// holding v) satisfies n.
func valueSatisfies(v any, n sqlCond) bool {
	br := bracketOf(v)
	switch n.op {
	case "$exists":
		return br != brNull && br != brUndefined
	case "$eq":
		return bracketOf(n.value) == br && Compare(v, n.value) == 0 && br != brArray
	case "$in":
		a, _ := asArray(n.value)
		for _, x := range a {
			x = normalize(x)
			if bracketOf(x) == br && Compare(v, x) == 0 && br != brArray {
				return true
			}
		}
		return false
	case "$gt", "$gte", "$lt", "$lte":
		if br != bracketOf(n.value) || !rangeBracket(v) || !rangeBracket(n.value) {
			return false
		}
		c := Compare(v, n.value)
		switch n.op {
		case "$gt":
			return c > 0
		case "$gte":
			return c >= 0
		case "$lt":
			return c < 0
		}
		return c <= 0
	}
	return false
}
