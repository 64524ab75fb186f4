package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
)

// Pipelines whose first stage makes documents rather than reading a
// collection: $collStats (stats.go) and $currentOp (currentop.go).

// aggregateAccess is what an aggregate needs: find on the collection,
// except for the source stages: collStats for $collStats, and nothing
// more than being a user for $currentOp (whose allUsers the stage checks
// against inprog).
var aggregateAccess = access{kind: accessCollection, actionsFor: func(cmd bson.D) auth.ActionSet {
	if p, _ := lookup(cmd, "pipeline"); p != nil {
		if a, _ := p.(bson.A); len(a) > 0 {
			if st, _ := a[0].(bson.D); len(st) == 1 {
				switch st[0].Key {
				case "$currentOp":
					return 0
				case "$collStats":
					return auth.Actions(auth.ActCollStats)
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
	if !ok || len(first) != 1 || (first[0].Key != "$collStats" && first[0].Key != "$currentOp") {
		return nil, false, nil
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
	sink := &exec.Collect{}
	head, err := exec.Build(stages, sink, &exec.Env{Ctx: ctx, Read: h.reader(req, req.on)})
	if err != nil {
		return nil, true, err
	}
	var docs bson.A
	ns := req.DB + ".$cmd.aggregate"
	if first[0].Key == "$currentOp" {
		docs, err = h.currentOpStage(req, first[0].Value)
	} else {
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
			return nil, true, err
		}
	}
	if err := head.Finish(); err != nil {
		return nil, true, err
	}
	reply, err = h.firstBatch(ctx, req.on, req, ns, &exec.SliceSource{Docs: sink.Raws}, batchSize, false)
	return reply, true, err
}
