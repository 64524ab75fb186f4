package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Text scores in a pipeline. A pipeline whose leading $match has $text
// runs with Env.TextScore: the input sets it to each document's score
// before pushing the document, and {$meta: "textScore"} reads it while
// that push runs. The score travels with the document, never in it: the
// stages that pass documents on at once carry it for free, and $sort
// holds each document in a small envelope with its score
// ({s: score, d: document}) that it opens again as it passes the
// documents on (unwrapStage). A stage after one that does not carry the
// score refuses {$meta: "textScore"} with NotImplemented; a pipeline
// without $text refuses it with MongoDB's 40218.

// carriesMeta are the stages whose output documents keep their input's
// text score (and which may read it).
var carriesMeta = map[string]bool{
	"$match": true, "$project": true, "$unset": true, "$addFields": true, "$set": true,
	"$skip": true, "$limit": true, "$sort": true, "$unwind": true, "$redact": true,
	"$replaceRoot": true, "$replaceWith": true,
}

// readsMeta are the stages that may read the score of the documents they
// take, though what they produce has none: the expressions of $group,
// $bucket and $sortByCount (evaluated as each document comes), and
// $facet's sub-pipelines (which take each document as it comes).
var readsMeta = map[string]bool{"$group": true, "$bucket": true, "$sortByCount": true, "$facet": true}

// stageEnvs is the environment of each stage: where the text score is
// available, and the refusal of {$meta: "textScore"} where it is not.
// Without $text every stage has env itself.
func stageEnvs(stages []bson.D, env *Env) []*Env {
	out := make([]*Env, len(stages))
	if env.TextScore == nil && env.noMeta == nil {
		for i := range out {
			out[i] = env
		}
		return out
	}
	meta, noMeta := env.TextScore, env.noMeta
	for i, st := range stages {
		name := st[0].Key
		e := *env
		e.TextScore, e.noMeta = meta, noMeta
		if meta != nil && !carriesMeta[name] && !readsMeta[name] {
			e.TextScore, e.noMeta = nil, mongoerr.Newf(mongoerr.NotImplemented, "{$meta: \"textScore\"} in a %s stage is not supported by tierdb", name)
		}
		out[i] = &e
		if meta != nil && !carriesMeta[name] {
			meta, noMeta = nil, mongoerr.Newf(mongoerr.NotImplemented, "{$meta: \"textScore\"} after a %s stage is not supported by tierdb (the score is carried through $match, $project, $unset, $addFields, $set, $skip, $limit, $sort, $unwind, $redact and $replaceRoot, and read in $group, $bucket, $sortByCount and $facet)", name)
		}
	}
	return out
}

// scope is the expression scope of a stage: the pipeline's variables and
// its text score where available.
func (env *Env) scope() *expr.Scope {
	return env.withMeta(expr.NewScope(env.Vars))
}

func (env *Env) withMeta(s *expr.Scope) *expr.Scope {
	return s.WithMeta(env.TextScore, env.noMeta)
}

// metaMissing is the error of {$meta: "textScore"} where there is no score.
func (env *Env) metaMissing() error {
	if env.noMeta != nil {
		return env.noMeta
	}
	return expr.ErrNoTextScore()
}

// checkMatchMeta refuses {$meta: ...} in a later $match of a $text
// pipeline ($expr there is compiled without the score).
func checkMatchMeta(filter bson.D, env *Env) error {
	if env.TextScore == nil && env.noMeta == nil {
		return nil
	}
	if hasMetaKey(filter) {
		return mongoerr.New(mongoerr.NotImplemented, "{$meta: \"textScore\"} in a $match after the first stage is not supported by tierdb")
	}
	return nil
}

func hasMetaKey(v any) bool {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if e.Key == "$meta" || hasMetaKey(e.Value) {
				return true
			}
		}
	case bson.A:
		for _, e := range x {
			if hasMetaKey(e) {
				return true
			}
		}
	}
	return false
}

// metaSortKey reports whether a $sort key's value is {$meta: ...}, and
// its keyword.
func metaSortKey(v any) (any, bool) {
	d, ok := v.(bson.D)
	if !ok || len(d) != 1 || d[0].Key != "$meta" {
		return nil, false
	}
	return d[0].Value, true
}

// newSortStage is $sort, d already checked by checkSortStage. Where the
// text score is available it sorts envelopes {s: score, d: document}, by
// s descending for {$meta: "textScore"} and by d.<key> for the others.
func newSortStage(d bson.D, next Stage, env *Env) (Stage, error) {
	var plain bson.D
	hasMeta := false
	for _, e := range d {
		if kw, ok := metaSortKey(e.Value); ok {
			if err := expr.CheckMetaKeyword(kw); err != nil {
				return nil, err
			}
			hasMeta = true
			continue
		}
		plain = append(plain, e)
	}
	s, err := query.ParseSort(plain)
	if err != nil {
		return nil, err
	}
	if env.TextScore == nil {
		if hasMeta {
			return nil, env.metaMissing()
		}
		return &sortStage{next: next, sort: s, spill: env.AllowDiskUse, tempDir: env.TempDir}, nil
	}
	var wrapped bson.D
	for _, e := range d {
		switch _, isMeta := metaSortKey(e.Value); {
		case isMeta:
			wrapped = append(wrapped, bson.E{Key: "s", Value: int32(-1)})
		case e.Key != "$natural":
			wrapped = append(wrapped, bson.E{Key: "d." + e.Key, Value: e.Value})
		}
	}
	if s, err = query.ParseSort(wrapped); err != nil {
		return nil, err
	}
	return &sortStage{next: &unwrapStage{meta: env.TextScore, next: next}, sort: s, wrap: env.TextScore,
		spill: env.AllowDiskUse, tempDir: env.TempDir}, nil
}

// wrapScored is the envelope $sort holds a document in, with its score.
func wrapScored(doc bson.D, m *expr.Meta) bson.D {
	return bson.D{{Key: "s", Value: m.TextScore}, {Key: "d", Value: doc}}
}

// unwrapStage opens $sort's envelopes: it sets the score and passes the
// document on.
type unwrapStage struct {
	meta *expr.Meta
	next Stage
}

func (u *unwrapStage) Push(env bson.D) error {
	if len(env) != 2 {
		return errLostScore()
	}
	score, ok1 := env[0].Value.(float64)
	doc, ok2 := env[1].Value.(bson.D)
	if !ok1 || !ok2 {
		return errLostScore()
	}
	u.meta.TextScore = score
	return u.next.Push(doc)
}

func (u *unwrapStage) Finish() error { return u.next.Finish() }

func errLostScore() error {
	return mongoerr.New(mongoerr.InternalError, "a sorted document lost its text score")
}
