package query

// ElementMatcher compiles a condition on single values, with the semantics
// of $pull's condition on array elements:
//   - a document of operators ({$gte: 6}, {$in: [...]}) applies them to the
//     value itself, as $elemMatch's value form does;
//   - any other document is a filter that the value, which must then be a
//     document, has to match ({item: "B"} matches {item: "B", score: 8});
//   - a regex matches strings and symbols;
//   - anything else must be equal to the value (null also matching
//     undefined).
//
// Invalid conditions fail like ParseFilter.
func ElementMatcher(cond any) (func(v any) bool, error) {
	cond = normalize(cond)
	if ops, ok := operatorDoc(cond); ok {
		x, err := parseOps("", ops)
		if err != nil {
			return nil, err
		}
		return func(v any) bool { return x.matchElem(normalize(v), false) }, nil
	}
	if d, ok := asDoc(cond); ok {
		sub, err := parseDoc(d, nil)
		if err != nil {
			return nil, err
		}
		return func(v any) bool {
			e, ok := asDoc(normalize(v))
			return ok && sub.matchDoc(e)
		}, nil
	}
	x, err := parseFieldCond("", cond)
	if err != nil {
		return nil, err
	}
	return func(v any) bool { return x.matchElem(normalize(v), false) }, nil
}
