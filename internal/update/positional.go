package update

import (
	"regexp"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Positional update paths: "$" stands for the array position the query
// matched (query.Filter.MatchedPosition), "$[]" for every element of the
// array, "$[<id>]" for the elements that the array filter named <id>
// accepts. Before the modifiers run, each such path is expanded against the
// document into the concrete paths it names.

// isArrayPlaceholder reports "$[]" and "$[<id>]" components.
func isArrayPlaceholder(p string) bool {
	return len(p) >= 3 && p[0] == '$' && p[1] == '[' && p[len(p)-1] == ']'
}

func isPositional(p string) bool { return p == "$" || isArrayPlaceholder(p) }

// hasPositional reports whether any component of parts is positional.
func hasPositional(parts []string) bool {
	for _, p := range parts {
		if isPositional(p) {
			return true
		}
	}
	return false
}

// arrayFilterID accepts MongoDB's identifiers: a lowercase letter, then
// letters and digits.
var arrayFilterID = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// arrayFilter is one parsed element of arrayFilters: a filter on the
// document {<id>: element}.
type arrayFilter struct {
	id     string
	filter *query.Filter
	used   bool
}

// parseArrayFilters parses the arrayFilters option. Each filter's top-level
// fields (inside $and/$or/$nor too) must all start with one identifier.
func parseArrayFilters(filters bson.A) (map[string]*arrayFilter, error) {
	out := map[string]*arrayFilter{}
	for _, v := range filters {
		fd, ok := v.(bson.D)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch,
				"BSON field 'arrayFilters' must be an array of objects, found %s", query.TypeName(v))
		}
		f, err := query.ParseFilter(fd)
		if err != nil {
			return nil, prefixErr(err, "Error parsing array filter :: caused by :: ")
		}
		id, err := filterIdentifier(fd)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return nil, mongoerr.New(mongoerr.FailedToParse,
				"Cannot use an expression without a top-level field name in arrayFilters")
		}
		if !arrayFilterID.MatchString(id) {
			return nil, mongoerr.Newf(mongoerr.BadValue,
				"Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", id)
		}
		if _, dup := out[id]; dup {
			return nil, mongoerr.Newf(mongoerr.FailedToParse,
				"Found multiple array filters with the same top-level field name %s", id)
		}
		out[id] = &arrayFilter{id: id, filter: f}
	}
	return out, nil
}

func prefixErr(err error, prefix string) error {
	if me, ok := err.(*mongoerr.Error); ok {
		return &mongoerr.Error{Code: me.Code, Msg: prefix + me.Msg, Cause: me.Cause}
	}
	return err
}

// filterIdentifier returns the one identifier a filter document is about.
func filterIdentifier(fd bson.D) (string, error) {
	id := ""
	for _, e := range fd {
		var name string
		switch e.Key {
		case "$and", "$or", "$nor":
			arr, _ := e.Value.(bson.A)
			for _, c := range arr {
				sub, _ := c.(bson.D)
				n, err := filterIdentifier(sub)
				if err != nil {
					return "", err
				}
				if n == "" {
					continue
				}
				if id != "" && n != id {
					return "", twoIdentifiers(id, n)
				}
				id = n
			}
			continue
		case "$comment":
			continue
		default:
			if strings.HasPrefix(e.Key, "$") {
				return "", mongoerr.Newf(mongoerr.FailedToParse,
					"Error parsing array filter :: caused by :: %s is not allowed in an array filter", e.Key)
			}
			name, _, _ = strings.Cut(e.Key, ".")
		}
		if id != "" && name != id {
			return "", twoIdentifiers(id, name)
		}
		id = name
	}
	return id, nil
}

func twoIdentifiers(a, b string) error {
	return mongoerr.Newf(mongoerr.FailedToParse,
		"Error parsing array filter :: caused by :: Expected a single top-level field name, found '%s' and '%s'", a, b)
}

// checkPositionalPath enforces MongoDB's rules on where positional
// components may appear, and that every identifier has a filter, which it
// marks used.
func checkPositionalPath(path string, parts []string, filters map[string]*arrayFilter) error {
	dollars := 0
	for i, p := range parts {
		switch {
		case p == "$":
			dollars++
			if dollars > 1 {
				return mongoerr.Newf(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
			}
			if i == 0 {
				return mongoerr.Newf(mongoerr.BadValue,
					"Cannot have positional (i.e. '$') element in the first position in path '%s'", path)
			}
		case isArrayPlaceholder(p):
			if i == 0 {
				return mongoerr.Newf(mongoerr.BadValue,
					"Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '%s'", path)
			}
			id := p[2 : len(p)-1]
			if id == "" {
				continue
			}
			f, ok := filters[id]
			if !ok {
				return mongoerr.Newf(mongoerr.BadValue, "No array filter found for identifier '%s' in path '%s'", id, path)
			}
			f.used = true
		}
	}
	return nil
}

// concreteOp is one op at one concrete path, and the template it came from.
type concreteOp struct {
	op       *fieldOp
	parts    []string
	template []string
}

// expand returns the concrete paths a positional template names in root.
func (u *Update) expand(root any, parts []string, matched string) ([][]string, error) {
	var out [][]string
	var walk func(v any, exists bool, prefix []string, rest []string) error
	walk = func(v any, exists bool, prefix []string, rest []string) error {
		for j, p := range rest {
			switch {
			case p == "$":
				if matched == "" {
					return mongoerr.New(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
				}
				p = matched
			case isArrayPlaceholder(p):
				if !exists {
					return mongoerr.Newf(mongoerr.BadValue,
						"The path '%s' must exist in the document in order to apply array updates.", strings.Join(prefix, "."))
				}
				arr, ok := v.(bson.A)
				if !ok {
					return mongoerr.Newf(mongoerr.BadValue, "Cannot apply array updates to non-array element %s: %s",
						prefix[len(prefix)-1], formatValue(v))
				}
				id := p[2 : len(p)-1]
				for i, e := range arr {
					if id != "" && !u.filters[id].filter.Match(bson.D{{Key: id, Value: e}}) {
						continue
					}
					next := append(append([]string(nil), prefix...), strconv.Itoa(i))
					if err := walk(e, true, next, rest[j+1:]); err != nil {
						return err
					}
				}
				return nil
			}
			if exists {
				v, exists = getPath(v, []string{p})
			}
			prefix = append(prefix, p)
		}
		out = append(out, prefix)
		return nil
	}
	if err := walk(root, true, make([]string, 0, len(parts)), parts); err != nil {
		return nil, err
	}
	return out, nil
}

// conflictAt names where two concrete paths from different templates
// collide the way MongoDB reports it: concrete up to the last component
// where the templates differ, then as written.
func conflictAt(a, b concreteOp) string {
	last := 0
	for i := 0; i < len(a.template) && i < len(b.template); i++ {
		if a.template[i] != b.template[i] {
			last = i
		}
	}
	n := min(len(a.parts), len(b.parts))
	out := append([]string(nil), a.parts[:min(last+1, n)]...)
	if len(a.parts) <= len(b.parts) {
		out = append(out, a.template[len(out):]...)
	} else {
		out = append(out, b.template[len(out):]...)
	}
	return strings.Join(out, ".")
}
