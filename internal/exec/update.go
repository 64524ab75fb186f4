package exec

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// updateStages are the stages MongoDB allows in a pipeline-style update.
var updateStages = map[string]bool{
	"$addFields": true, "$set": true, "$project": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true,
}

// knownStage reports the stage names newStage recognises, implemented or
// not, so that a stage refused in an update is told apart from a typo.
func knownStage(name string) bool {
	switch name {
	case "$match", "$skip", "$limit", "$count", "$sort", "$group", "$unwind", "$sortByCount",
		"$bucket", "$facet", "$sample", "$lookup", "$unionWith",
		"$graphLookup", "$bucketAuto", "$setWindowFields", "$out", "$merge":
		return true
	}
	return updateStages[name] || unsupportedStages[name]
}

// UpdatePipeline is a compiled pipeline-style update: it satisfies
// update.Pipeline. It is safe for concurrent use.
type UpdatePipeline struct {
	mu    sync.Mutex
	first Stage
	sink  *docsSink
}

// NewUpdatePipeline compiles the "u" of a pipeline-style update (an array
// of $addFields/$set, $project, $unset, $replaceRoot/$replaceWith stages)
// with the statement's variables (let and the statement's constants) and
// $$NOW fixed for the whole statement. Other stages fail with
// InvalidOptions, as in MongoDB.
func NewUpdatePipeline(pipeline bson.A, vars map[string]any, now bson.DateTime) (*UpdatePipeline, error) {
	stages, err := ParsePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	for _, st := range stages {
		name := st[0].Key
		if !updateStages[name] && knownStage(name) {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
		}
	}
	u := &UpdatePipeline{sink: &docsSink{what: "the update pipeline"}}
	u.first, err = Build(stages, u.sink, &Env{Vars: vars, Now: now})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Transform runs the pipeline on one document.
func (u *UpdatePipeline) Transform(doc bson.D) (bson.D, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sink.docs, u.sink.mem = nil, 0
	if err := u.first.Push(doc); err != nil {
		return nil, err
	}
	if len(u.sink.docs) != 1 {
		return nil, mongoerr.Newf(mongoerr.InternalError, "an update pipeline produced %d documents", len(u.sink.docs))
	}
	out := u.sink.docs[0]
	u.sink.docs = nil
	return out, nil
}
