package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

func stringOps() map[string]parser {
	return map[string]parser{
		"$concat":       nary(0, -1, concat),
		"$substr":       naryNamed(3, 3, substrBytes),
		"$substrBytes":  naryNamed(3, 3, substrBytes),
		"$substrCP":     naryNamed(3, 3, substrCP),
		"$toLower":      nary(1, 1, caseMap(asciiLower)),
		"$toUpper":      nary(1, 1, caseMap(asciiUpper)),
		"$strLenBytes":  nary(1, 1, strLen("$strLenBytes", mongoerr.Location34473, func(s string) int { return len(s) })),
		"$strLenCP":     nary(1, 1, strLen("$strLenCP", mongoerr.Location34471, utf8.RuneCountInString)),
		"$split":        nary(2, 2, split),
		"$trim":         parseTrim,
		"$ltrim":        parseTrim,
		"$rtrim":        parseTrim,
		"$indexOfBytes": naryNamed(2, 4, indexOfBytes),
		"$indexOfCP":    naryNamed(2, 4, indexOfCP),
		"$regexMatch":   parseRegexMatch,
		"$regexFind":    parseRegexMatch,
		"$regexFindAll": parseRegexMatch,
		"$replaceOne":   parseReplace,
		"$replaceAll":   parseReplace,
		"$strcasecmp":   nary(2, 2, strcasecmp),
	}
}

func concat(args []any) (any, error) {
	var b strings.Builder
	for _, v := range args {
		if nullish(v) {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location16702, "$concat only supports strings, not %s", TypeName(v))
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

func substrBytes(name string, a []any) (any, error) {
	if name == "$substr" {
		name = "$substrBytes"
	}
	s, err := coerceToString(a[0])
	if err != nil {
		return nil, err
	}
	if !isNumber(a[1]) {
		return nil, mongoerr.Newf(mongoerr.Location16034, "%s:  starting index must be a numeric type (is BSON type %s)", name, TypeName(a[1]))
	}
	if !isNumber(a[2]) {
		return nil, mongoerr.Newf(mongoerr.Location16035, "%s:  length must be a numeric type (is BSON type %s)", name, TypeName(a[2]))
	}
	lower := toLong(a[1])
	if lower < 0 {
		return nil, mongoerr.Newf(mongoerr.Location50752, "%s:  starting index must be non-negative (got: %d)", name, lower)
	}
	length := toLong(a[2])
	if length < 0 || length > int64(len(s)) {
		length = int64(len(s))
	}
	if lower < int64(len(s)) && isContinuation(s[lower]) {
		return nil, mongoerr.Newf(mongoerr.Location28656, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", name)
	}
	end := lower + length
	if end < int64(len(s)) && isContinuation(s[end]) {
		return nil, mongoerr.Newf(mongoerr.Location28657, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.", name)
	}
	if lower >= int64(len(s)) {
		return "", nil
	}
	return s[lower:min(end, int64(len(s)))], nil
}

func substrCP(name string, a []any) (any, error) {
	s, err := coerceToString(a[0])
	if err != nil {
		return nil, err
	}
	if !isNumber(a[1]) {
		return nil, mongoerr.Newf(mongoerr.Location34450, "%s: starting index must be a numeric type (is BSON type %s)", name, TypeName(a[1]))
	}
	start, ok := int32Of(a[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34451, "%s: starting index cannot be represented as a 32-bit integral value: %s", name, FormatValue(a[1]))
	}
	if !isNumber(a[2]) {
		return nil, mongoerr.Newf(mongoerr.Location34452, "%s: length must be a numeric type (is BSON type %s)", name, TypeName(a[2]))
	}
	length, ok := int32Of(a[2])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34453, "%s: length cannot be represented as a 32-bit integral value: %s", name, FormatValue(a[2]))
	}
	if length < 0 {
		return nil, mongoerr.Newf(mongoerr.Location34454, "%s: length must be a nonnegative integer.", name)
	}
	if start < 0 {
		return nil, mongoerr.Newf(mongoerr.Location34455, "%s: the starting index must be nonnegative integer.", name)
	}
	runes := []rune(s)
	if start >= len(runes) {
		return "", nil
	}
	return string(runes[start:min(start+length, len(runes))]), nil
}

// asciiLower and asciiUpper change ASCII letters only, as MongoDB does.
func asciiLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

func asciiUpper(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - ('a' - 'A')
	}
	return r
}

func caseMap(fn func(rune) rune) opFunc {
	return func(a []any) (any, error) {
		s, err := coerceToString(a[0])
		if err != nil {
			return nil, err
		}
		return strings.Map(fn, s), nil
	}
}

func strLen(name string, code mongoerr.Code, n func(string) int) opFunc {
	return func(a []any) (any, error) {
		s, ok := a[0].(string)
		if !ok {
			return nil, mongoerr.Newf(code, "%s requires a string argument, found: %s", name, TypeName(a[0]))
		}
		return int32(n(s)), nil
	}
}

func split(a []any) (any, error) {
	if nullish(a[0]) || nullish(a[1]) {
		return nil, nil
	}
	s, ok := a[0].(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40085, "$split requires an expression that evaluates to a string as a first argument, found: %s", TypeName(a[0]))
	}
	sep, ok := a[1].(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40086, "$split requires an expression that evaluates to a string as a second argument, found: %s", TypeName(a[1]))
	}
	if sep == "" {
		return nil, mongoerr.New(mongoerr.Location40087, "$split requires a non-empty separator")
	}
	parts := strings.Split(s, sep)
	out := make(bson.A, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// trimSpace is what $trim removes without 'chars': MongoDB's list of
// whitespace code points.
const trimSpace = "\x00 \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"

func parseTrim(name string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location50696, "%s only supports an object as an argument, found %s", name, TypeName(arg))
	}
	var input, chars Expr
	for _, e := range d {
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "input":
			input = x
		case "chars":
			chars = x
		default:
			return nil, mongoerr.Newf(mongoerr.Location50694, "%s found an unknown argument: %s", name, e.Key)
		}
	}
	if input == nil {
		return nil, mongoerr.Newf(mongoerr.Location50695, "%s requires an 'input' field", name)
	}
	args := []Expr{input}
	if chars != nil {
		args = append(args, chars)
	}
	return &opExpr{args: args, fn: func(a []any) (any, error) {
		if nullish(a[0]) {
			return nil, nil
		}
		in, ok := a[0].(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location50699, "%s requires its input to be a string, got %s (of type %s) instead.", name, FormatValue(a[0]), TypeName(a[0]))
		}
		cut := trimSpace
		if len(a) > 1 {
			if nullish(a[1]) {
				return nil, nil
			}
			c, ok := a[1].(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.", name, FormatValue(a[1]), TypeName(a[1]))
			}
			cut = c
		}
		if name != "$rtrim" {
			in = strings.TrimLeft(in, cut)
		}
		if name != "$ltrim" {
			in = strings.TrimRight(in, cut)
		}
		return in, nil
	}}, nil
}

// indexArgs reads $indexOf*'s optional start and end indexes.
func indexArgs(name string, a []any, length int) (start, end int, err error) {
	start, end = 0, length
	for i, what := range []string{"starting index", "ending index"} {
		if len(a) <= 2+i {
			break
		}
		n, ok := int32Of(a[2+i])
		if !ok {
			return 0, 0, mongoerr.Newf(mongoerr.Location40096, "%srequires an integral %s, found a value of type: %s, with value: %s", name, what, TypeName(a[2+i]), FormatValue(a[2+i]))
		}
		if n < 0 {
			return 0, 0, mongoerr.Newf(mongoerr.Location40097, "%s requires a nonnegative %s, found: %d", name, what, n)
		}
		if i == 0 {
			start = n
		} else {
			end = min(n, length)
		}
	}
	return start, end, nil
}

func indexOfBytes(name string, a []any) (any, error) {
	return indexOf(name, a, mongoerr.Location40091, mongoerr.Location40092, func(s string) []string {
		out := make([]string, len(s))
		for i := range s {
			out[i] = s[i:]
		}
		return out
	})
}

func indexOfCP(name string, a []any) (any, error) {
	return indexOf(name, a, mongoerr.Location40093, mongoerr.Location40094, func(s string) []string {
		var out []string
		for i := range s {
			out = append(out, s[i:])
		}
		return out
	})
}

// indexOf finds the first unit (byte or code point) of the string at which
// the token starts, within [start, end); suffixes lists the string from
// each unit on.
func indexOf(name string, a []any, strCode, tokCode mongoerr.Code, suffixes func(string) []string) (any, error) {
	if nullish(a[0]) {
		return nil, nil
	}
	s, ok := a[0].(string)
	if !ok {
		return nil, mongoerr.Newf(strCode, "%s requires a string as the first argument, found: %s", name, TypeName(a[0]))
	}
	tok, ok := a[1].(string)
	if !ok {
		return nil, mongoerr.Newf(tokCode, "%s requires a string as the second argument, found: %s", name, TypeName(a[1]))
	}
	units := suffixes(s)
	start, end, err := indexArgs(name, a, len(units))
	if err != nil {
		return nil, err
	}
	if start > len(units) || end < start {
		return int32(-1), nil
	}
	if tok == "" && start <= end {
		return int32(start), nil
	}
	for i := start; i < end; i++ {
		if strings.HasPrefix(units[i], tok) {
			// The token must end within the range, too.
			if len(units[i])-len(tok) >= lenFrom(units, end) {
				return int32(i), nil
			}
		}
	}
	return int32(-1), nil
}

// lenFrom is how many bytes remain from unit i on (0 past the end).
func lenFrom(units []string, i int) int {
	if i >= len(units) {
		return 0
	}
	return len(units[i])
}

func parseRegexMatch(name string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location51103, "%s expects an object of named arguments but found: %s", name, TypeName(arg))
	}
	var input, re, opts Expr
	for _, e := range d {
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "input":
			input = x
		case "regex":
			re = x
		case "options":
			opts = x
		default:
			return nil, mongoerr.Newf(mongoerr.Location31024, "%s found an unknown argument: %s", name, e.Key)
		}
	}
	if input == nil {
		return nil, mongoerr.Newf(mongoerr.Location31022, "%s requires 'input' parameter", name)
	}
	if re == nil {
		return nil, mongoerr.Newf(mongoerr.Location31023, "%s requires 'regex' parameter", name)
	}
	if opts == nil {
		opts = constant{nil}
	}
	var cache struct {
		pattern, options string
		re               *regexp.Regexp
	}
	return &opExpr{args: []Expr{input, re, opts}, fn: func(a []any) (any, error) {
		in, pat, opt := a[0], a[1], a[2]
		if _, ok := in.(string); !ok && !nullish(in) {
			return nil, mongoerr.Newf(mongoerr.Location51104, "%s needs 'input' to be of type string", name)
		}
		var pattern, options string
		switch p := pat.(type) {
		case string:
			pattern = p
		case bson.Regex:
			pattern, options = p.Pattern, p.Options
			if options != "" && !nullish(opt) {
				return nil, mongoerr.Newf(mongoerr.Location51107, "%s: found regex option(s) specified in both 'regex' and 'option' fields", name)
			}
		default:
			if !nullish(pat) {
				return nil, mongoerr.Newf(mongoerr.Location51105, "%s needs 'regex' to be of type string or regex", name)
			}
		}
		if !nullish(opt) {
			o, ok := opt.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location51106, "%s needs 'options' to be of type string", name)
			}
			options = o
		}
		if nullish(in) || nullish(pat) {
			return regexNoInput(name), nil
		}
		if cache.re == nil || cache.pattern != pattern || cache.options != options {
			r, err := query.CompileRegex(pattern, options)
			if err != nil {
				return nil, mongoerr.Newf(mongoerr.Location51111, "Invalid Regex in %s: %v", name, err)
			}
			cache.pattern, cache.options, cache.re = pattern, options, r
		}
		return regexResult(name, cache.re, in.(string)), nil
	}}, nil
}

func strcasecmp(a []any) (any, error) {
	x, err := coerceToString(a[0])
	if err != nil {
		return nil, err
	}
	y, err := coerceToString(a[1])
	if err != nil {
		return nil, err
	}
	return int32(strings.Compare(strings.Map(asciiUpper, x), strings.Map(asciiUpper, y))), nil
}
