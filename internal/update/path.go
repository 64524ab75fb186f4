package update

import (
	"strings"

	"tierdb/internal/mongoerr"
)

// splitUpdatePath validates a dotted path used as a key of an update
// operator and splits it into its components.
func splitUpdatePath(path string) ([]string, error) {
	if path == "" {
		return nil, mongoerr.New(codeEmptyFieldName, "An empty update path is not valid.")
	}
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return nil, mongoerr.Newf(codeEmptyFieldName,
				"The update path '%s' contains an empty field name, which is not allowed.", path)
		}
		if isPositional(p) {
			continue // checked by checkPositionalPath
		}
		if p[0] == '$' {
			return nil, mongoerr.Newf(mongoerr.DollarPrefixedFieldName,
				"The dollar ($) prefixed field '%s' in '%s' is not valid for storage.", p, path)
		}
	}
	return parts, nil
}

// arrayIndex reports whether p addresses an array element, and which.
// Leading zeros are refused so that "01" and "1" can never name the same
// element, which would defeat conflict detection.
func arrayIndex(p string) (int, bool) {
	if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// comparePaths orders paths the way MongoDB 5.0+ processes update
// operators: component by component, numerically when both components are
// numbers and bytewise otherwise, a prefix before its extensions. Applying
// modifications in this order makes new fields appear in the same order
// MongoDB would create them.
func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareComponents(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func compareComponents(a, b string) int {
	if isDigits(a) && isDigits(b) {
		// Compare as unbounded integers: strip leading zeros, then the
		// longer number is larger.
		ta, tb := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(ta) != len(tb) {
			return len(ta) - len(tb)
		}
		if c := strings.Compare(ta, tb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pathSet detects update paths that overlap: the same path twice, or one
// path being a prefix of another. MongoDB refuses such updates because the
// result would depend on the order of application.
type pathSet struct {
	full     map[string]bool
	prefixes map[string]bool
	// arrayNode records, for each prefix, whether its children are array
	// placeholders ("$[]", "$[<id>]") rather than fields: MongoDB's
	// update tree cannot mix the two under one node.
	arrayNode map[string]bool
}

func newPathSet() *pathSet {
	return &pathSet{full: map[string]bool{}, prefixes: map[string]bool{}, arrayNode: map[string]bool{}}
}

func (s *pathSet) add(path string, parts []string) error {
	conflict := ""
	switch {
	case s.full[path] || s.prefixes[path]:
		conflict = path
	default:
		for i := 1; i < len(parts); i++ {
			if p := strings.Join(parts[:i], "."); s.full[p] {
				conflict = p
				break
			}
		}
	}
	if conflict == "" {
		for i := 1; i < len(parts); i++ {
			p := strings.Join(parts[:i], ".")
			kind, seen := s.arrayNode[p]
			if seen && kind != isArrayPlaceholder(parts[i]) {
				conflict = p
				break
			}
		}
	}
	if conflict != "" {
		return mongoerr.Newf(mongoerr.ConflictingUpdateOperators,
			"Updating the path '%s' would create a conflict at '%s'", path, conflict)
	}
	s.full[path] = true
	for i := 1; i < len(parts); i++ {
		s.arrayNode[strings.Join(parts[:i], ".")] = isArrayPlaceholder(parts[i])
	}
	for i := 1; i < len(parts); i++ {
		s.prefixes[strings.Join(parts[:i], ".")] = true
	}
	return nil
}
