package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// $documents makes a pipeline's input from an expression that evaluates
// to an array of documents, instead of reading a collection. It is only
// valid first: in a collectionless aggregate ({aggregate: 1}) and in the
// sub-pipeline of $lookup or $unionWith, which then read no collection.
// Anywhere else Build refuses it with 40602.

// LeadingDocuments splits off a leading $documents stage: its argument
// and the stages after it. ok is false when the first stage is another.
func LeadingDocuments(stages []bson.D) (arg any, rest []bson.D, ok bool) {
	if len(stages) == 0 || stages[0][0].Key != "$documents" {
		return nil, stages, false
	}
	return stages[0][0].Value, stages[1:], true
}

// EvalDocuments evaluates a $documents argument with env's variables and
// $$NOW: an array of documents (40228 for an element that is not one,
// 5858203 when it is no array), held within the memory limit.
func EvalDocuments(arg any, env *Env) ([]bson.D, error) {
	x, err := expr.Parse(arg, env.scope())
	if err != nil {
		return nil, err
	}
	now := env.Now
	if now == 0 {
		now = expr.Now()
	}
	v, err := x.Eval(expr.NewCtx(bson.D{}, env.Vars, now))
	if err != nil {
		return nil, err
	}
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Code(5858203), "error during aggregation :: caused by :: an array is expected, but $documents evaluated to %s", query.TypeName(v))
	}
	docs := make([]bson.D, len(arr))
	mem := 0
	for i, e := range arr {
		d, ok := e.(bson.D)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Code(40228), "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.", expr.FormatValue(e), query.TypeName(e))
		}
		if mem += DocMemory(d); mem > MaxMemoryBytes {
			return nil, Exceeded("$documents")
		}
		docs[i] = d
	}
	return docs, nil
}

// RunDocuments pushes docs into head, then finishes it.
func RunDocuments(docs []bson.D, head Stage) error {
	for _, d := range docs {
		if err := head.Push(d); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	return head.Finish()
}
