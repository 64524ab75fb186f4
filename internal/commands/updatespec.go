package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/update"
)

// updateEnv is what every statement of one update, delete or findAndModify command
// shares: the command's let variables and $$NOW, fixed for the command.
type updateEnv struct {
	vars map[string]any
	now  bson.DateTime
}

// newUpdateEnv evaluates the command's let: constants and expressions over
// no document, which pipeline-style updates and the query's $expr read as
// $$name.
func newUpdateEnv(cmd bson.D) (*updateEnv, error) {
	env := &updateEnv{now: expr.Now()}
	let, err := getDoc(cmd, "let")
	if err != nil || let == nil {
		return env, err
	}
	env.vars, err = evalConstants(let, env.now, nil)
	return env, err
}

// evalConstants evaluates each field of d as an expression over no
// document, with base's variables in scope; the result extends base.
func evalConstants(d bson.D, now bson.DateTime, base map[string]any) (map[string]any, error) {
	vars := make(map[string]any, len(base)+len(d))
	for k, v := range base {
		vars[k] = v
	}
	scope := expr.NewScope(base)
	for _, e := range d {
		x, err := expr.Parse(e.Value, scope)
		if err != nil {
			return nil, err
		}
		v, err := x.Eval(expr.NewCtx(bson.D{}, base, now))
		if err != nil {
			return nil, err
		}
		vars[e.Key] = v
	}
	return vars, nil
}

// parseUpdateArg parses an update ("u" of a statement, "update" of
// findAndModify): an operator or replacement document, or a pipeline.
// arrayFilters and constants ("c") are the statement's own options; field
// names them in errors.
func (env *updateEnv) parseUpdateArg(u any, arrayFilters any, hasFilters bool, constants bson.D, field string) (*update.Update, error) {
	var filters bson.A
	if hasFilters && arrayFilters != nil {
		a, ok := arrayFilters.(bson.A)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch,
				"BSON field '%s' is the wrong type '%s', expected type 'array'", field, query.TypeName(arrayFilters))
		}
		filters = a
	}
	if p, ok := u.(bson.A); ok {
		if len(filters) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may not be specified for pipeline-style updates")
		}
		vars := env.vars
		if constants != nil {
			var err error
			if vars, err = evalConstants(constants, env.now, env.vars); err != nil {
				return nil, err
			}
		}
		pl, err := exec.NewUpdatePipeline(p, vars, env.now)
		if err != nil {
			return nil, err
		}
		return update.FromPipeline(pl), nil
	}
	if constants != nil {
		return nil, mongoerr.New(mongoerr.Code(51198), "Constant values may only be specified for pipeline updates")
	}
	return update.ParseWithOptions(u, update.Options{ArrayFilters: filters})
}

// readSpec parses the query of an update or findAndModify, with the
// command's let variables and $$NOW in scope of its $expr.
func (env *updateEnv) readSpec(q, sortDoc bson.D, limit int64) (*exec.ReadSpec, error) {
	rs, err := exec.ParseReadSpec(nil, sortDoc, nil, 0, limit)
	if err != nil {
		return nil, err
	}
	// The command's one $$NOW, also in the query's $expr.
	if rs.Filter, err = query.ParseFilterVars(q, expr.WithNow(env.vars, env.now)); err != nil {
		return nil, err
	}
	rs.Empty, rs.Exact = len(q) == 0, exec.IsIDEquality(q)
	return rs, nil
}
