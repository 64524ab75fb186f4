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
// instead of reading the collection ($collStats, $currentOp); handled is
// false for any other pipeline.
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
	env, err := sourceEnv(ctx, req, h.reader(req))
	if err != nil {
		return nil, true, err
	}
	sink := &exec.Collect{}
	head, err := exec.Build(stages, sink, env)
	if err != nil {
		return nil, true, err
	}
	var docs bson.A
	ns := req.DB + ".$cmd.aggregate"
	switch first[0].Key {
	case "$currentOp":
		docs, err = h.currentOpStage(req, first[0].Value)
	case "$documents":
		var ds []bson.D
		if ds, err = exec.EvalDocuments(first[0].Value, env); err == nil {
			err = exec.RunDocuments(ds, head)
		}
		if err != nil {
			return nil, true, h.memoryError(req, err)
		}
		reply, err = h.firstBatch(ctx, req, ns, &sliceSource{docs: sink.Raws}, batchSize, false)
		return reply, true, err
	case "$indexStats":
		docs, err = h.indexStatsStage(ctx, req, first[0].Value)
		ns = req.DB + "." + req.Cmd[0].Value.(string)
	default:
		docs, err = h.collStatsStage(ctx, req, first[0].Value)
		ns = req.DB + "." + req.Cmd[0].Value.(string)
	}
	if err != nil {
		return nil, true, err
	}
	for _, d := range docs {
		if err := head.Push(d.(bson.D)); err != nil {
			if err == exec.ErrDone {
				break
			}
			return nil, true, h.memoryError(req, err)
		}
	}
	if err := head.Finish(); err != nil {
		return nil, true, h.memoryError(req, err)
	}
	reply, err = h.firstBatch(ctx, req, ns, &sliceSource{docs: sink.Raws}, batchSize, false)
	return reply, true, err
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
	return &exec.Env{Ctx: ctx, Read: read, Vars: vars, Now: now, DB: req.DB, AllowDiskUse: allowDisk, Output: noOutput{}}, nil
}
