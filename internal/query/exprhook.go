package query

import (
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// ExprPredicate is a compiled $expr: whether the expression is true for
// a document.
type ExprPredicate func(doc bson.D) (bool, error)

// exprCompiler compiles the argument of $expr with the given variables. The
// expression language lives above this package (it orders values with
// Compare), so it registers itself here (package expr, in its init);
// without it $expr is refused.
var exprCompiler func(arg any, vars map[string]any) (ExprPredicate, error)

// RegisterExpr installs the $expr compiler. It is called once, from an
// init function.
func RegisterExpr(compile func(arg any, vars map[string]any) (ExprPredicate, error)) {
	exprCompiler = compile
}

// parseCtx is what parsing a top-level filter carries: the filter (where
// $expr errors are recorded) and the variables $expr may read.
type parseCtx struct {
	filter *Filter
	vars   map[string]any
}

func (pc *parseCtx) parseExpr(arg any) (docExpr, error) {
	if pc == nil {
		return nil, badValue("$expr can only be applied to the top-level document")
	}
	if exprCompiler == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "$expr is not supported")
	}
	pred, err := exprCompiler(arg, pc.vars)
	if err != nil {
		return nil, err
	}
	return exprDoc{pred: pred, filter: pc.filter}, nil
}

// exprDoc matches documents for which an $expr is true. It is never pushed
// down to SQL: Filter.SQL only reads field conditions.
type exprDoc struct {
	pred   ExprPredicate
	filter *Filter
}

func (e exprDoc) matchDoc(doc bson.D) bool {
	ok, err := e.pred(doc)
	if err != nil {
		if e.filter.exprErr == nil {
			e.filter.exprErr = err
		}
		return false
	}
	return ok
}

// CompileRegex compiles a MongoDB (PCRE) pattern with its options as
// filters do, for $regexMatch.
func CompileRegex(pattern, options string) (*regexp.Regexp, error) {
	p, err := compileRegex(pattern, options)
	return p.re, err
}
