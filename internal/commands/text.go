package commands

import (
	"context"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// $text search in find, count, distinct and an aggregate's leading $match.
// The $text clause is taken out of the
// filter (splitText) and run by storage on the collection's text index
// (PostgreSQL full-text search); the rest of the filter is matched as
// usual. Everywhere else (aggregate, update, delete, ...) $text is still
// refused by the filter parser with NotImplemented.

// textQuery is a parsed {$text: {$search, $language, ...}}.
type textQuery struct {
	language string // MongoDB language name; "" for the index's default
	terms    []string
	phrases  []string
	negated  []string
	// negatedPhrases: -"..." (none of them may appear).
	negatedPhrases []string
}

// splitText takes a top-level $text (also inside a top-level $and) out of
// filter; text is nil when there is none.
func splitText(filter bson.D) (rest bson.D, text *textQuery, err error) {
	var found []any
	for _, e := range filter {
		switch e.Key {
		case "$text":
			found = append(found, e.Value)
			continue
		case "$and":
			if a, ok := e.Value.(bson.A); ok {
				var keep bson.A
				for _, c := range a {
					if d, ok := c.(bson.D); ok && len(d) == 1 && d[0].Key == "$text" {
						found = append(found, d[0].Value)
						continue
					}
					keep = append(keep, c)
				}
				if len(keep) == 0 {
					continue
				}
				e = bson.E{Key: "$and", Value: keep}
			}
		}
		rest = append(rest, e)
	}
	switch len(found) {
	case 0:
		return filter, nil, nil
	case 1:
	default:
		return nil, nil, mongoerr.New(mongoerr.BadValue, "Too many text expressions")
	}
	text, err = parseTextQuery(found[0])
	return rest, text, err
}

func parseTextQuery(v any) (*textQuery, error) {
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$text expects an object")
	}
	t := &textQuery{}
	search, hasSearch := "", false
	for _, e := range d {
		switch e.Key {
		case "$search":
			s, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$search requires a string value")
			}
			search, hasSearch = s, true
		case "$language":
			s, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$language requires a string value")
			}
			if _, ok := storage.TextConfig(s); !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue, "unsupported language: \"%s\" for text index version 3", s)
			}
			t.language = s
		case "$caseSensitive", "$diacriticSensitive":
			b, ok := e.Value.(bool)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue, "%s requires a boolean value", e.Key)
			}
			if b {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "%s: true is not supported by tierdb (text search is case and diacritic insensitive)", e.Key)
			}
		default:
			return nil, mongoerr.Newf(mongoerr.BadValue, "extra fields in $text: %s", e.Key)
		}
	}
	if !hasSearch {
		return nil, mongoerr.New(mongoerr.BadValue, "$search required for $text")
	}
	t.terms, t.phrases, t.negated, t.negatedPhrases = parseSearchString(search)
	return t, nil
}

// parseSearchString splits a $search string as MongoDB does: text between
// double quotes is a phrase, a word or phrase starting with '-' is
// negated, other words are terms (any of which may match).
func parseSearchString(s string) (terms, phrases, negated, negatedPhrases []string) {
	for len(s) > 0 {
		r := rune(s[0])
		switch {
		case r == '"' || strings.HasPrefix(s, `-"`):
			neg := r == '-'
			if neg {
				s = s[1:]
			}
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				end = len(s) - 1
			}
			if p := strings.TrimSpace(s[1 : 1+end]); p != "" {
				if neg {
					negatedPhrases = append(negatedPhrases, p)
				} else {
					phrases = append(phrases, p)
				}
			}
			s = s[min(len(s), end+2):]
		case unicode.IsSpace(r):
			s = s[1:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(s)
			}
			w := s[:end]
			s = s[end:]
			if strings.HasPrefix(w, "-") {
				if w = strings.TrimLeft(w, "-"); w != "" {
					negated = append(negated, w)
				}
				continue
			}
			terms = append(terms, w)
		}
	}
	return terms, phrases, negated, negatedPhrases
}

// splitMetaSort parses a sort that may hold {$meta: "textScore"}.
func splitMetaSort(spec bson.D) ([]exec.TextSortKey, error) {
	var keys []exec.TextSortKey
	for _, e := range spec {
		if m, ok := metaValue(e.Value); ok {
			if m != "textScore" {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "$meta \"%s\" is not supported by tierdb", m)
			}
			keys = append(keys, exec.TextSortKey{Score: true})
			continue
		}
		s, err := query.ParseSort(bson.D{e})
		if err != nil {
			return nil, err
		}
		keys = append(keys, exec.TextSortKey{By: s})
	}
	return keys, nil
}

// splitMetaProjection takes {field: {$meta: "textScore"}} out of a projection.
func splitMetaProjection(spec bson.D) (rest bson.D, scoreFields []string, err error) {
	for _, e := range spec {
		if m, ok := metaValue(e.Value); ok {
			if m != "textScore" {
				return nil, nil, mongoerr.Newf(mongoerr.NotImplemented, "$meta \"%s\" is not supported by tierdb", m)
			}
			scoreFields = append(scoreFields, e.Key)
			continue
		}
		rest = append(rest, e)
	}
	return rest, scoreFields, nil
}

func metaValue(v any) (string, bool) {
	d, ok := v.(bson.D)
	if !ok || len(d) != 1 || d[0].Key != "$meta" {
		return "", false
	}
	s, _ := d[0].Value.(string)
	return s, true
}

// spec is the search of a $text query, the rest of the query left to the
// caller.
func (t *textQuery) spec() *exec.TextSpec {
	return &exec.TextSpec{Language: t.language, Terms: t.terms, Phrases: t.phrases, Negated: t.negated, NegatedPhrases: t.negatedPhrases}
}

// parseTextSpec parses a find or count with $text.
func parseTextSpec(text *textQuery, rest, sortDoc, proj bson.D, skip, limit int64) (*exec.TextSpec, error) {
	f, err := query.ParseFilter(rest)
	if err != nil {
		return nil, err
	}
	ts := text.spec()
	ts.Filter, ts.Empty, ts.Skip, ts.Limit = f, len(rest) == 0, skip, limit
	if ts.Sort, err = splitMetaSort(sortDoc); err != nil {
		return nil, err
	}
	if proj, ts.ScoreFields, err = splitMetaProjection(proj); err != nil {
		return nil, err
	}
	if len(proj) > 0 {
		if ts.Proj, err = update.ParseProjection(proj, f); err != nil {
			return nil, err
		}
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	return ts, nil
}

// textCollection is the collection a $text query reads; without one, no
// text index either.
func (h *Handlers) textCollection(ctx context.Context, on storage.On, db, name string) (*storage.Collection, error) {
	col, err := h.store.Collection(ctx, on, db, name)
	if storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	return col, err
}

// textRead is the $text search ts of db.name (exec.TextRead), on the node
// the request was routed to.
func (h *Handlers) textRead(ctx context.Context, on storage.On, db, name string, ts *exec.TextSpec) (*exec.TextRead, error) {
	col, err := h.textCollection(ctx, on, db, name)
	if err != nil {
		return nil, err
	}
	return &exec.TextRead{Store: h.store, On: on, Col: col, Spec: ts}, nil
}

// routedTextRead is textRead on the node the router picks for req; done
// ends the read's routing.
func (h *Handlers) routedTextRead(ctx context.Context, req *Request, name string, ts *exec.TextSpec) (*exec.TextRead, func(), error) {
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, nil, err
	}
	read, err := h.textRead(ctx, on, req.DB, name, ts)
	if err != nil {
		done()
		return nil, nil, err
	}
	return read, done, nil
}

// findText is find with $text.
func (h *Handlers) findText(ctx context.Context, req *Request, name string, text *textQuery, rest, sortDoc, proj bson.D, skip, limit int64, batchSize int, singleBatch bool) (bson.D, error) {
	ts, err := parseTextSpec(text, rest, sortDoc, proj, skip, limit)
	if err != nil {
		return nil, err
	}
	read, done, err := h.routedTextRead(ctx, req, name, ts)
	if err != nil {
		return nil, err
	}
	defer done()
	src, err := read.Open(ctx)
	if err != nil {
		return nil, err
	}
	return h.firstBatch(ctx, read.On, req, read.Col.Namespace(), src, batchSize, singleBatch)
}

// countText is count with $text.
func (h *Handlers) countText(ctx context.Context, req *Request, name string, text *textQuery, rest bson.D, skip, limit int64) (bson.D, error) {
	ts, err := parseTextSpec(text, rest, nil, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	read, done, err := h.routedTextRead(ctx, req, name, ts)
	if err != nil {
		return nil, err
	}
	defer done()
	results, err := read.Search(ctx)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "n", Value: countValue(int64(len(results)))}}, nil
}

// readText streams the documents a pipeline's leading {$match: {$text}}
// selects to fn, in the text index's order (by _id), setting meta to each
// one's score before it is pushed (what {$meta: "textScore"} reads in the
// later stages, exec's meta.go).
func (h *Handlers) readText(ctx context.Context, on storage.On, db, coll string, text *textQuery, rs *exec.ReadSpec, meta *expr.Meta, fn func(bson.D) error) error {
	ts := text.spec()
	ts.Filter, ts.Empty = rs.Filter, rs.Empty
	read, err := h.textRead(ctx, on, db, coll, ts)
	if err != nil {
		return err
	}
	results, err := read.Search(ctx)
	if err != nil {
		return err
	}
	for _, r := range results {
		meta.TextScore = r.Score
		if err := fn(r.Doc); err != nil {
			return err
		}
	}
	return nil
}
