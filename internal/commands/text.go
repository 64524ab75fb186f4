package commands

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/exec"
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

// metaKey is one key of a sort with text scores: {$meta: "textScore"}
// (score) or an ordinary field (by).
type metaKey struct {
	score bool
	by    query.Sort
}

// splitMetaSort parses a sort that may hold {$meta: "textScore"}.
func splitMetaSort(spec bson.D) ([]metaKey, error) {
	var keys []metaKey
	for _, e := range spec {
		if m, ok := metaValue(e.Value); ok {
			if m != "textScore" {
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "$meta \"%s\" is not supported by tierdb", m)
			}
			keys = append(keys, metaKey{score: true})
			continue
		}
		s, err := query.ParseSort(bson.D{e})
		if err != nil {
			return nil, err
		}
		keys = append(keys, metaKey{by: s})
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

// textSpec is a find or count with $text.
type textSpec struct {
	text        *textQuery
	filter      *query.Filter
	empty       bool
	sort        []metaKey
	proj        *update.Projection
	scoreFields []string
	skip, limit int64
}

func parseTextSpec(text *textQuery, rest, sortDoc, proj bson.D, skip, limit int64) (*textSpec, error) {
	f, err := query.ParseFilter(rest)
	if err != nil {
		return nil, err
	}
	ts := &textSpec{text: text, filter: f, empty: len(rest) == 0, skip: skip, limit: limit}
	if ts.sort, err = splitMetaSort(sortDoc); err != nil {
		return nil, err
	}
	if proj, ts.scoreFields, err = splitMetaProjection(proj); err != nil {
		return nil, err
	}
	if len(proj) > 0 {
		if ts.proj, err = update.ParseProjection(proj, f); err != nil {
			return nil, err
		}
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative")
	}
	return ts, nil
}

// textResult is one matching document with its score.
type textResult struct {
	raw   bson.Raw
	doc   bson.D
	score float64
}

// searchText runs the search and returns the matches in the requested
// order, skipped and limited.
func (h *Handlers) searchText(ctx context.Context, on storage.On, col *storage.Collection, ts *textSpec) ([]textResult, error) {
	ix := col.TextIndexOf()
	if ix == nil {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	lang := ts.text.language
	if lang == "" {
		lang = ix.Text.DefaultLanguage
	}
	cfg, _ := storage.TextConfig(lang)
	where, args := ts.filter.SQL(col.KeyColumns(), 1)
	q := storage.TextSearch{Config: cfg, Terms: ts.text.terms, Phrases: ts.text.phrases, Negated: ts.text.negated, NegatedPhrases: ts.text.negatedPhrases,
		Where: where, Args: args, MaxBytes: maxSortBytes}
	scoreOnly := len(ts.sort) == 1 && ts.sort[0].score
	q.ByScore = scoreOnly
	if ts.empty && ts.limit > 0 && (len(ts.sort) == 0 || scoreOnly) {
		q.Limit = int(min(ts.skip+ts.limit, 1<<30))
	}
	rows, err := h.store.SearchText(ctx, on, col, ix, q)
	if err != nil {
		return nil, err
	}
	// The matches are held (to sort them by score): in both forms, within
	// the in-memory sort limit.
	var out []textResult
	held := 0
	for _, r := range rows {
		d, err := bsonx.Decode(r.Doc)
		if err != nil {
			return nil, mongoerr.New(mongoerr.InternalError, "stored document is corrupt")
		}
		if held += len(r.Doc) + exec.DocMemory(d); held > maxSortBytes {
			return nil, mongoerr.New(mongoerr.QueryExceededMemoryLimit, "$text results exceeded the memory limit of 104857600 bytes; add a limit or a narrower search")
		}
		if !ts.empty {
			ok, err := ts.filter.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, textResult{raw: r.Doc, doc: d, score: r.Score})
	}
	if len(ts.sort) > 0 && !scoreOnly {
		slices.SortStableFunc(out, func(a, b textResult) int {
			for _, k := range ts.sort {
				if k.score {
					if a.score != b.score {
						if a.score > b.score {
							return -1
						}
						return 1
					}
					continue
				}
				if c := k.by.Compare(a.doc, b.doc); c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if ts.skip >= int64(len(out)) {
		return nil, nil
	}
	out = out[ts.skip:]
	if ts.limit > 0 && int64(len(out)) > ts.limit {
		out = out[:ts.limit]
	}
	return out, nil
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

// textSearch runs ts on the text index of db.name.
func (h *Handlers) textSearch(ctx context.Context, on storage.On, db, name string, ts *textSpec) (*storage.Collection, []textResult, error) {
	col, err := h.textCollection(ctx, on, db, name)
	if err != nil {
		return nil, nil, err
	}
	results, err := h.searchText(ctx, on, col, ts)
	return col, results, err
}

// findText is find with $text.
func (h *Handlers) findText(ctx context.Context, req *Request, name string, text *textQuery, rest, sortDoc, proj bson.D, skip, limit int64, batchSize int, singleBatch bool) (bson.D, error) {
	ts, err := parseTextSpec(text, rest, sortDoc, proj, skip, limit)
	if err != nil {
		return nil, err
	}
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	col, results, err := h.textSearch(ctx, on, req.DB, name, ts)
	if err != nil {
		return nil, err
	}
	docs := make([]bson.Raw, len(results))
	for i, r := range results {
		docs[i] = r.raw
		if ts.proj == nil && len(ts.scoreFields) == 0 {
			continue
		}
		d := r.doc
		if ts.proj != nil {
			if d, err = ts.proj.Apply(d); err != nil {
				return nil, err
			}
		}
		for _, f := range ts.scoreFields {
			d = slices.DeleteFunc(slices.Clone(d), func(e bson.E) bool { return e.Key == f })
			d = append(d, bson.E{Key: f, Value: r.score})
		}
		if docs[i], err = bsonx.Marshal(d); err != nil {
			return nil, err
		}
	}
	return h.firstBatch(ctx, on, req, col.Namespace(), &sliceSource{docs: docs}, batchSize, singleBatch)
}

// countText is count with $text.
func (h *Handlers) countText(ctx context.Context, req *Request, name string, text *textQuery, rest bson.D, skip, limit int64) (bson.D, error) {
	ts, err := parseTextSpec(text, rest, nil, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	on, done, err := h.routeRead(req)
	if err != nil {
		return nil, err
	}
	defer done()
	_, results, err := h.textSearch(ctx, on, req.DB, name, ts)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "n", Value: countValue(int64(len(results)))}}, nil
}

// readText streams the documents a pipeline's leading {$match: {$text}}
// selects to fn, in the text index's order (by _id). Their scores are not
// available to later stages ({$meta: "textScore"} there is refused by the
// expression parser).
func (h *Handlers) readText(ctx context.Context, on storage.On, db, coll string, text *textQuery, rs *readSpec, fn func(bson.D) error) error {
	_, results, err := h.textSearch(ctx, on, db, coll, &textSpec{text: text, filter: rs.filter, empty: rs.empty})
	if err != nil {
		return err
	}
	for _, r := range results {
		if err := fn(r.doc); err != nil {
			return err
		}
	}
	return nil
}
