package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// aggregate runs the small pipeline subset drivers need for counting and
// simple reports. A leading $match is pushed down to storage; the rest runs
// in memory over the matched documents.
func (h *Handlers) aggregate(ctx context.Context, req *Request) (bson.D, error) {
	name, err := collectionName(req)
	if err != nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "aggregate is supported on collections only")
	}
	pipeline, err := getArray(req.Cmd, "pipeline")
	if err != nil {
		return nil, err
	}
	cursorOpts, err := getDoc(req.Cmd, "cursor")
	if err != nil {
		return nil, err
	}
	if _, ok := lookup(req.Cmd, "cursor"); !ok {
		if explain, _ := getBool(req.Cmd, "explain", false); !explain {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
		}
	}
	batchSize, err := getBatchSize(cursorOpts, defaultFirstBatch)
	if err != nil {
		return nil, err
	}
	stages, err := exec.ParsePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	first, stages, err := exec.LeadingMatch(stages)
	if err != nil {
		return nil, err
	}
	rs, err := parseReadSpec(first, nil, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	// Build the rest of the pipeline before reading anything, so that a
	// bad stage fails at once.
	sink := &exec.Collect{}
	head, err := exec.Build(stages, sink)
	if err != nil {
		return nil, err
	}
	ctx, done, err := h.routeRead(ctx, req)
	if err != nil {
		return nil, err
	}
	defer done()
	col, err := h.store.Collection(ctx, req.DB, name)
	switch {
	case storage.IsCode(err, storage.ErrNamespaceNotFound):
	case err != nil:
		return nil, err
	default:
		// Documents stream through the stages one at a time: memory is
		// what the stages keep ($group's groups, $sort's input) and the
		// results, not every match.
		err = h.eachMatch(ctx, col, rs, func(doc bson.D, _ bson.Raw) (bool, error) {
			err := head.Push(doc)
			if err == exec.ErrDone {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := head.Finish(); err != nil {
		return nil, err
	}
	return h.firstBatch(ctx, req, req.DB+"."+name, &sliceSource{docs: sink.Raws}, batchSize, false)
}
