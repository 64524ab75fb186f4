package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// unsupportedOp reports operators MongoDB has and tierdb does not
// implement: they fail with NotImplemented rather than as unknown.
func unsupportedOp(op string) bool {
	switch op {
	case "$where", "$text", "$jsonSchema", "$sampleRate",
		"$geoWithin", "$geoIntersects", "$near", "$nearSphere", "$within":
		return true
	}
	return false
}

func badValue(format string, args ...any) error {
	return mongoerr.Newf(mongoerr.BadValue, format, args...)
}

func notImplemented(op string) error {
	return mongoerr.Newf(mongoerr.NotImplemented, "%s is not supported", op)
}

// parseDoc parses a filter document: an AND of its fields. pc is nil
// below the top level (inside $elemMatch), where $expr is not allowed.
func parseDoc(filter bson.D, pc *parseCtx) (docExpr, error) {
	var all andDoc
	for _, e := range filter {
		x, err := parseTopField(e, pc)
		if err != nil {
			return nil, err
		}
		if x != nil {
			all = append(all, x)
		}
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

func parseTopField(e bson.E, pc *parseCtx) (docExpr, error) {
	if !strings.HasPrefix(e.Key, "$") {
		x, err := parseFieldCond(e.Key, e.Value)
		if err != nil {
			return nil, err
		}
		return pathDoc{parts: splitPath(e.Key), expr: x}, nil
	}
	switch e.Key {
	case "$and", "$or", "$nor":
		subs, err := parseClauses(e.Key, e.Value, pc)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "$and":
			return andDoc(subs), nil
		case "$or":
			return orDoc(subs), nil
		}
		return norDoc(subs), nil
	case "$comment":
		return nil, nil
	case "$expr":
		return pc.parseExpr(e.Value)
	case "$alwaysTrue", "$alwaysFalse":
		if n, ok := numberAsFloat(normalize(e.Value)); !ok || n != 1 {
			return nil, badValue("%s must be an integer value of 1", e.Key)
		}
		return constDoc(e.Key == "$alwaysTrue"), nil
	}
	if unsupportedOp(e.Key) {
		return nil, notImplemented(e.Key)
	}
	return nil, badValue("unknown top level operator: %s", e.Key)
}

func parseClauses(op string, v any, pc *parseCtx) ([]docExpr, error) {
	a, ok := asArray(normalize(v))
	if !ok {
		return nil, badValue("%s must be an array", op)
	}
	if len(a) == 0 {
		return nil, badValue("$and/$or/$nor must be a nonempty array")
	}
	subs := make([]docExpr, 0, len(a))
	for _, c := range a {
		d, ok := asDoc(normalize(c))
		if !ok {
			return nil, badValue("$or/$and/$nor entries need to be full objects")
		}
		x, err := parseDoc(d, pc)
		if err != nil {
			return nil, err
		}
		subs = append(subs, x)
	}
	return subs, nil
}

// parseFieldCond parses the condition on one path: a document of operators,
// a regex, or a value to be equal to.
func parseFieldCond(path string, cond any) (fieldExpr, error) {
	v := normalize(cond)
	if ops, ok := operatorDoc(v); ok {
		return parseOps(path, ops)
	}
	if r, ok := v.(bson.Regex); ok {
		p, err := compileRegex(r.Pattern, r.Options)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: p, mode: leafExpand}, nil
	}
	return eqExpr(v)
}

func eqExpr(v any) (fieldExpr, error) {
	if _, ok := v.(bson.Undefined); ok {
		return nil, badValue("cannot compare to undefined")
	}
	return leafExpr{pred: newCmpPred(opEQ, v), mode: leafExpand}, nil
}

// parseOps parses a document of operators on one path; they all must hold.
func parseOps(path string, ops bson.D) (fieldExpr, error) {
	var all andExpr
	var regex, options *bson.E
	for i := range ops {
		op := ops[i]
		switch op.Key {
		case "$regex":
			regex = &ops[i]
			continue
		case "$options":
			options = &ops[i]
			continue
		}
		x, err := parseOp(path, op.Key, normalize(op.Value))
		if err != nil {
			return nil, err
		}
		all = append(all, x)
	}
	if options != nil && regex == nil {
		return nil, badValue("$options needs a $regex")
	}
	if regex != nil {
		p, err := parseRegexOp(regex.Value, options)
		if err != nil {
			return nil, err
		}
		all = append(all, leafExpr{pred: p, mode: leafExpand})
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

func parseRegexOp(re any, options *bson.E) (regexPred, error) {
	var pattern, flags string
	switch x := normalize(re).(type) {
	case string:
		pattern = x
	case bson.Regex:
		pattern, flags = x.Pattern, x.Options
	default:
		return regexPred{}, badValue("$regex has to be a string")
	}
	if options != nil {
		o, ok := normalize(options.Value).(string)
		if !ok {
			return regexPred{}, badValue("$options has to be a string")
		}
		if flags != "" && o != "" {
			return regexPred{}, badValue("options set in both $regex and $options")
		}
		if o != "" {
			flags = o
		}
	}
	return compileRegex(pattern, flags)
}

func parseOp(path, op string, arg any) (fieldExpr, error) {
	switch op {
	case "$eq":
		return eqExpr(arg)
	case "$ne":
		if _, ok := arg.(bson.Regex); ok {
			return nil, badValue("Can't have regex as arg to $ne.")
		}
		x, err := eqExpr(arg)
		if err != nil {
			return nil, err
		}
		return notExpr{x}, nil
	case "$lt", "$lte", "$gt", "$gte":
		return parseRange(path, op, arg)
	case "$in":
		return parseIn(op, arg)
	case "$nin":
		x, err := parseIn(op, arg)
		if err != nil {
			return nil, err
		}
		return notExpr{x}, nil
	case "$exists":
		x := leafExpr{pred: existsPred{}, mode: leafExpand}
		if truthy(arg) {
			return x, nil
		}
		return notExpr{x}, nil
	case "$type":
		p, err := parseType(arg)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: p, mode: leafExpand}, nil
	case "$size":
		n, err := parseSize(arg)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: sizePred{n: n}, mode: leafWhole}, nil
	case "$all":
		return parseAll(path, arg)
	case "$elemMatch":
		return parseElemMatch(path, arg)
	case "$not":
		return parseNot(path, arg)
	case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
		p, err := parseBits(path, op, arg)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: p, mode: leafExpand}, nil
	case "$mod":
		p, err := parseMod(arg)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: p, mode: leafExpand}, nil
	}
	if unsupportedOp(op) {
		return nil, notImplemented(op)
	}
	return nil, badValue("unknown operator: %s", op)
}

func parseRange(path, op string, arg any) (fieldExpr, error) {
	switch arg.(type) {
	case bson.Regex:
		return nil, badValue("Can't have RegEx as arg to predicate over field '%s'.", path)
	case bson.Undefined:
		return nil, badValue("cannot compare to undefined")
	}
	ops := map[string]cmpOp{"$lt": opLT, "$lte": opLTE, "$gt": opGT, "$gte": opGTE}
	return leafExpr{pred: newCmpPred(ops[op], arg), mode: leafExpand}, nil
}

// parseAll turns $all into an AND: of equalities (or regex matches), or of
// $elemMatch conditions; the two kinds cannot be mixed. An empty $all
// matches nothing.
func parseAll(path string, arg any) (fieldExpr, error) {
	a, ok := asArray(arg)
	if !ok {
		return nil, badValue("$all needs an array")
	}
	if len(a) == 0 {
		return constExpr(false), nil
	}
	all := make(andExpr, 0, len(a))
	first, _ := operatorDoc(normalize(a[0]))
	elemMatches := len(first) > 0 && first[0].Key == "$elemMatch"
	for _, v := range a {
		v = normalize(v)
		ops, isOps := operatorDoc(v)
		if elemMatches {
			if !isOps || ops[0].Key != "$elemMatch" {
				return nil, badValue("$all/$elemMatch has to be consistent")
			}
			x, err := parseElemMatch(path, normalize(ops[0].Value))
			if err != nil {
				return nil, err
			}
			all = append(all, x)
			continue
		}
		if isOps {
			return nil, badValue("no $ expressions in $all")
		}
		x, err := parseFieldCond(path, v)
		if err != nil {
			return nil, err
		}
		all = append(all, x)
	}
	return all, nil
}

// pathlessOp reports operators that do not apply to a field: an
// $elemMatch starting with one of them has the object form.
func pathlessOp(op string) bool {
	switch op {
	case "$and", "$or", "$nor", "$where", "$expr", "$comment", "$alwaysTrue",
		"$alwaysFalse", "$jsonSchema", "$text", "$sampleRate":
		return true
	}
	return false
}

func parseElemMatch(path string, arg any) (fieldExpr, error) {
	d, ok := asDoc(arg)
	if !ok {
		return nil, badValue("$elemMatch needs an Object")
	}
	if ops, isOps := operatorDoc(d); isOps && !pathlessOp(ops[0].Key) {
		sub, err := parseOps(path, ops)
		if err != nil {
			return nil, err
		}
		return leafExpr{pred: elemMatchValuePred{sub: sub}, mode: leafWhole}, nil
	}
	sub, err := parseDoc(d, nil)
	if err != nil {
		return nil, err
	}
	return leafExpr{pred: elemMatchDocPred{sub: sub}, mode: leafWhole}, nil
}

func parseNot(path string, arg any) (fieldExpr, error) {
	switch x := arg.(type) {
	case bson.Regex:
		p, err := compileRegex(x.Pattern, x.Options)
		if err != nil {
			return nil, err
		}
		return notExpr{leafExpr{pred: p, mode: leafExpand}}, nil
	case bson.D:
		if len(x) == 0 {
			return nil, badValue("$not cannot be empty")
		}
		ops, ok := operatorDoc(x)
		if !ok {
			return nil, badValue("$not needs a regex or a document")
		}
		sub, err := parseOps(path, ops)
		if err != nil {
			return nil, err
		}
		return notExpr{sub}, nil
	}
	return nil, badValue("$not needs a regex or a document")
}

// constExpr matches always or never.
type constExpr bool

func (c constExpr) matchPath(bson.D, []string) bool { return bool(c) }
func (c constExpr) matchElem(any, bool) bool        { return bool(c) }
