package expr

import (
	"fmt"

	"tierdb/internal/mongoerr"
)

// Meta is the metadata of the document a pipeline is passing along: the
// text score its leading $text $match gave it. One Meta serves one
// pipeline; the stage that pushes a document sets it first, and
// {$meta: "textScore"} reads it while that push runs.
type Meta struct {
	TextScore float64
}

// WithMeta returns a copy of s where {$meta: "textScore"} reads m. With m
// nil the score is not available and such an expression fails to parse
// with missing (nil: MongoDB's 40218, no $text query).
func (s *Scope) WithMeta(m *Meta, missing error) *Scope {
	c := *s
	c.meta, c.noMeta = m, missing
	return &c
}

// ErrNoTextScore is MongoDB's error for a text score no $text query gave.
func ErrNoTextScore() error {
	return mongoerr.New(mongoerr.Location40218, "query requires text score metadata, but it is not available")
}

// otherMeta are MongoDB's $meta keywords other than textScore, which
// tierdb does not produce.
var otherMeta = map[string]bool{
	"searchScore": true, "searchHighlights": true, "searchScoreDetails": true, "searchSequenceToken": true,
	"vectorSearchScore": true, "score": true, "scoreDetails": true, "indexKey": true, "sortKey": true,
	"recordId": true, "geoNearDistance": true, "geoNearPoint": true, "randVal": true, "timeseriesBucketMinTime": true,
	"timeseriesBucketMaxTime": true, "changeStreamControlEvent": true,
}

// CheckMetaKeyword checks a $meta keyword: nil for "textScore",
// NotImplemented for MongoDB's other keywords, 17308 for unknown ones.
func CheckMetaKeyword(arg any) error {
	name, ok := arg.(string)
	switch {
	case ok && name == "textScore":
		return nil
	case ok && otherMeta[name]:
		return mongoerr.Newf(mongoerr.NotImplemented, "$meta \"%s\" is not supported by tierdb (only \"textScore\" is)", name)
	case ok:
		return mongoerr.Newf(mongoerr.Location17308, "Unsupported argument to $meta: %s", name)
	}
	return mongoerr.Newf(mongoerr.Location17308, "Unsupported argument to $meta: %v", fmt.Sprint(arg))
}

// metaExpr is {$meta: "textScore"}.
type metaExpr struct{ m *Meta }

func (e metaExpr) Eval(*Ctx) (any, error) { return e.m.TextScore, nil }

func parseMeta(_ string, arg any, s *Scope) (Expr, error) {
	if err := CheckMetaKeyword(arg); err != nil {
		return nil, err
	}
	if s.meta == nil {
		if s.noMeta != nil {
			return nil, s.noMeta
		}
		return nil, ErrNoTextScore()
	}
	return metaExpr{s.meta}, nil
}
