package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
)

// Pipelines whose first stage makes documents rather than reading a
// collection: $collStats (stats.go), $currentOp (currentop.go),
// $indexStats (indexstats.go) and $documents (exec/documents.go).

// aggregateAccess is what an aggregate needs: find on the collection,
// except for the source stages: collStats for $collStats, and nothing
// more than being a user for $currentOp (whose allUsers the stage checks
// against inprog).
var aggregateAccess = access{kind: accessCollection, actionsFor: func(cmd bson.D) auth.ActionSet {
	if p, _ := lookup(cmd, "pipeline"); p != nil {
		if a, _ := p.(bson.A); len(a) > 0 {
			if st, _ := a[0].(bson.D); len(st) == 1 {
				switch st[0].Key {
				case "$currentOp", "$documents":
					return 0
				case "$collStats":
					return auth.Actions(auth.ActCollStats)
				case "$indexStats":
					// MongoDB's indexStats action; the roles that
					// hold it hold listIndexes too.
					return auth.Actions(auth.ActListIndexes)
				}
			}
		}
	}
	return auth.Actions(auth.ActFind)
}}

// aggregateSource runs a pipeline whose first stage produces documents
// instead of reading the collection ($collStats, $currentOp, $indexStats,
// $documents); handled is false for any other pipeline.
func (h *Handlers) aggregateSource(ctx context.Context, req *Request) (reply bson.D, handled bool, err error) {
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil || len(pipeline) == 0 {
		return nil, false, nil
	}
	first, ok := pipeline[0].(bson.D)
	if !ok || len(first) != 1 || !sourceStages[first[0].Key] {
		return nil, false, nil
	}
	_, onCollection := req.Cmd[0].Value.(string)
	if first[0].Key == "$documents" && onCollection {
		return nil, true, mongoerr.New(mongoerr.InvalidNamespace, "$documents may only be used with {aggregate: 1}, not on a collection")
	}
	if explain, _ := getBool(req.Cmd, "explain", false); explain {
		return nil, true, mongoerr.Newf(mongoerr.NotImplemented, "explain of a %s pipeline is not supported by tierdb", first[0].Key)
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, true, err
	}
	if _, ok := lookup(req.Cmd, "cursor"); !ok {
		return nil, true, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, true, err
	}
	stages, err := exec.ParsePipeline(pipeline[1:])
	if err != nil {
		return nil, true, err
	}
	run := func(ctx context.Context, req *Request) (bson.D, error) {
		env, err := sourceEnv(ctx, req, h.reader(req, req.on))
		if err != nil {
			return nil, err
		}
		out := h.newOutput(ctx, req) // $out and $merge after the source
		defer out.Abort(ctx)
		env.Output = out
		sink := &exec.Collect{}
		head, err := exec.Build(stages, sink, env)
		if err != nil {
			return nil, err
		}
		ns, err := h.runSource(ctx, req, first[0], env, head)
		if err != nil {
			return nil, h.memoryError(req, err)
		}
		return h.firstBatch(ctx, req.on, req, ns, &exec.SliceSource{Docs: sink.Raws}, batchSize, false)
	}
	if writes(pipeline) {
		reply, err = h.withWriteConcern(ctx, req, run)
	} else {
		reply, err = run(ctx, req)
	}
	return reply, true, err
}

// runSource makes the source stage's documents and pushes them through
// head; ns is the cursor's namespace.
func (h *Handlers) runSource(ctx context.Context, req *Request, src bson.E, env *exec.Env, head exec.Stage) (ns string, err error) {
	var docs bson.A
	ns = req.DB + ".$cmd.aggregate"
	switch src.Key {
	case "$currentOp":
		docs, err = h.currentOpStage(req, src.Value)
	case "$documents":
		ds, err := exec.EvalDocuments(src.Value, env)
		if err != nil {
			return "", err
		}
		return ns, exec.RunDocuments(ds, head)
	case "$indexStats":
		docs, err = h.indexStatsStage(ctx, req, src.Value)
		ns = req.DB + "." + req.Cmd[0].Value.(string)
	default:
		docs, err = h.collStatsStage(ctx, req, src.Value)
		ns = req.DB + "." + req.Cmd[0].Value.(string)
	}
	if err != nil {
		return "", err
	}
	for _, d := range docs {
		if err := head.Push(d.(bson.D)); err == exec.ErrDone {
			break
		} else if err != nil {
			return "", err
		}
	}
	return ns, head.Finish()
}

// sourceStages are the stages aggregateSource runs when they come first.
var sourceStages = map[string]bool{"$collStats": true, "$currentOp": true, "$indexStats": true, "$documents": true}

// sourceEnv is what the stages after a source stage run with: the
// command's let, one $$NOW, allowDiskUse and reads of the database's
// other collections.
func sourceEnv(ctx context.Context, req *Request, read exec.Reader) (*exec.Env, error) {
	now := expr.Now()
	vars, err := letVarsAt(req.Cmd, now)
	if err != nil {
		return nil, err
	}
	allowDisk, err := getBool(req.Cmd, "allowDiskUse", true)
	if err != nil {
		return nil, err
	}
	return &exec.Env{Ctx: ctx, Read: read, Vars: vars, Now: now, DB: req.DB, AllowDiskUse: allowDisk}, nil
}
