package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
)

// redactStage is $redact: its expression is evaluated at each document
// and, where it answers $$DESCEND, at each embedded document (also in
// arrays) with $$CURRENT pointing there. $$PRUNE leaves that document out
// (a top-level one is dropped), $$KEEP keeps it whole, and $$DESCEND keeps
// its fields but redacts the documents inside them; anything else is
// error 17053.
type redactStage struct {
	next Stage
	e    expr.Expr
	ctx  *expr.Ctx
}

// The values of $redact's variables, as MongoDB defines them.
const (
	redactDescend = "descend"
	redactPrune   = "prune"
	redactKeep    = "keep"
)

func newRedact(arg any, next Stage, env *Env) (Stage, error) {
	vars := make(map[string]any, len(env.Vars)+3)
	for k, v := range env.Vars {
		vars[k] = v
	}
	vars["DESCEND"], vars["PRUNE"], vars["KEEP"] = redactDescend, redactPrune, redactKeep
	e, err := expr.Parse(arg, env.withMeta(expr.NewScopeWith(vars, "DESCEND", "PRUNE", "KEEP")))
	if err != nil {
		return nil, err
	}
	return &redactStage{next: next, e: e, ctx: expr.NewCtx(nil, vars, env.Now)}, nil
}

func (r *redactStage) Push(doc bson.D) error {
	r.ctx.Reset(doc)
	out, keep, err := r.redact(doc)
	if err != nil || !keep {
		return err
	}
	return r.next.Push(out)
}

func (r *redactStage) Finish() error { return r.next.Finish() }

// redact decides for one (embedded) document; keep is false when it is
// pruned.
func (r *redactStage) redact(d bson.D) (bson.D, bool, error) {
	r.ctx.SetCurrent(d)
	v, err := r.e.Eval(r.ctx)
	if err != nil {
		return nil, false, err
	}
	switch v {
	case redactKeep:
		return d, true, nil
	case redactPrune:
		return nil, false, nil
	case redactDescend:
	default:
		return nil, false, mongoerr.Newf(mongoerr.Code(17053), "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", expr.FormatValue(v))
	}
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		val, keep, err := r.redactValue(e.Value)
		if err != nil {
			return nil, false, err
		}
		if keep {
			out = append(out, bson.E{Key: e.Key, Value: val})
		}
	}
	return out, true, nil
}

// redactValue redacts the documents in a field's value: a document
// itself, the documents in an array (pruned ones removed), nested arrays
// likewise; other values stay.
func (r *redactStage) redactValue(v any) (any, bool, error) {
	switch x := v.(type) {
	case bson.D:
		return r.redact(x)
	case bson.A:
		out := make(bson.A, 0, len(x))
		for _, e := range x {
			val, keep, err := r.redactValue(e)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, val)
			}
		}
		return out, true, nil
	}
	return v, true, nil
}
