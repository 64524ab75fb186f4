package update

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Pipeline is a pipeline-style update ("u" given as an array of stages),
// compiled by the package that owns the expression language (exec): it
// turns a document into exactly one document. This package cannot depend
// on exec, which depends on it.
type Pipeline interface {
	Transform(doc bson.D) (bson.D, error)
}

// FromPipeline wraps a compiled pipeline-style update. Apply runs it and
// keeps _id as MongoDB does: a result without _id gets the document's,
// a different _id fails with ImmutableField. Upserts build their document
// from the query's equalities, as for operator updates, then run it.
func FromPipeline(p Pipeline) *Update {
	return &Update{pipeline: p, now: time.Now}
}

func (u *Update) applyPipeline(doc bson.D) (bson.D, error) {
	in := doc
	if in == nil {
		in = bson.D{}
	}
	out, err := u.pipeline.Transform(copyDoc(in))
	if err != nil {
		return nil, err
	}
	oldID, had := lookupID(doc)
	newID, has := lookupID(out)
	switch {
	case had && has && !identical(oldID, newID):
		return nil, mongoerr.Newf(mongoerr.ImmutableField,
			"After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s",
			formatValue(newID))
	case had && !has:
		out = append(bson.D{{Key: "_id", Value: deepCopy(oldID)}}, out...)
	}
	return out, nil
}
