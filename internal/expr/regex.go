package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $regexFind and $regexFindAll (parsed with $regexMatch), $replaceOne and
// $replaceAll.

// regexNoInput is the result for a null or missing input or regex.
func regexNoInput(name string) any {
	switch name {
	case "$regexFind":
		return nil
	case "$regexFindAll":
		return bson.A{}
	}
	return false
}

// regexResult applies re to in as the operator does: a boolean
// ($regexMatch), the first match ($regexFind: null when none) or every
// match ($regexFindAll), each {match, idx, captures} with idx in code
// points and an unmatched group's capture null.
func regexResult(name string, re *regexp.Regexp, in string) any {
	switch name {
	case "$regexFind":
		loc := re.FindStringSubmatchIndex(in)
		if loc == nil {
			return nil
		}
		return regexMatchDoc(in, loc)
	case "$regexFindAll":
		out := bson.A{}
		for _, loc := range re.FindAllStringSubmatchIndex(in, -1) {
			out = append(out, regexMatchDoc(in, loc))
		}
		return out
	}
	return re.MatchString(in)
}

func regexMatchDoc(in string, loc []int) bson.D {
	captures := bson.A{}
	for g := 2; g+1 < len(loc); g += 2 {
		if loc[g] < 0 {
			captures = append(captures, nil)
			continue
		}
		captures = append(captures, in[loc[g]:loc[g+1]])
	}
	return bson.D{
		{Key: "match", Value: in[loc[0]:loc[1]]},
		{Key: "idx", Value: int32(utf8.RuneCountInString(in[:loc[0]]))},
		{Key: "captures", Value: captures},
	}
}

// parseReplace parses $replaceOne and $replaceAll: {input, find,
// replacement}, all strings, or null (the result is then null).
func parseReplace(name string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location51751, "%s requires an object as an argument, found: %s", name, TypeName(arg))
	}
	var input, find, repl Expr
	for _, e := range d {
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "input":
			input = x
		case "find":
			find = x
		case "replacement":
			repl = x
		default:
			return nil, mongoerr.Newf(mongoerr.Location51750, "%s found an unknown argument: %s", name, e.Key)
		}
	}
	for _, req := range []struct {
		x    Expr
		what string
		code mongoerr.Code
	}{{input, "input", mongoerr.Location51749}, {find, "find", mongoerr.Location51748}, {repl, "replacement", mongoerr.Location51747}} {
		if req.x == nil {
			return nil, mongoerr.Newf(req.code, "%s requires '%s' to be specified", name, req.what)
		}
	}
	return &opExpr{args: []Expr{input, find, repl}, fn: func(a []any) (any, error) {
		null := false
		codes := []mongoerr.Code{mongoerr.Location51746, mongoerr.Location51745, mongoerr.Location51744}
		for i, what := range []string{"input", "find", "replacement"} {
			if nullish(a[i]) {
				null = true
				continue
			}
			if _, ok := a[i].(string); !ok {
				return nil, mongoerr.Newf(codes[i], "%s requires that '%s' be a string, found: %s", name, what, TypeName(a[i]))
			}
		}
		if null {
			return nil, nil
		}
		in, f, r := a[0].(string), a[1].(string), a[2].(string)
		if name == "$replaceOne" {
			return strings.Replace(in, f, r, 1), nil
		}
		return strings.ReplaceAll(in, f, r), nil
	}}, nil
}
