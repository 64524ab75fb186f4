package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"tierdb/internal/query"
)

// Text indexes run on PostgreSQL's full-text search. The index's column is
// a tsvector computed at each write by tierdb.fts from what tierdb extracts
// in Go: the document's text search configuration (its language) and the
// indexed strings, diacritics removed, grouped into the four weight classes
// A-D (one per distinct weight of the index, so at most four). A GIN index
// on the column serves $text; ts_rank with the index's weights scores.

// TextIndex holds a text index's options.
type TextIndex struct {
	// Weights lists every indexed field ("$**": every string of the
	// document) with its weight, in key order.
	Weights          []TextWeight `json:"weights"`
	DefaultLanguage  string       `json:"defaultLanguage"`
	LanguageOverride string       `json:"languageOverride"`
}

// TextWeight is one field's weight.
type TextWeight struct {
	Field  string `json:"field"`
	Weight int32  `json:"weight"`
}

// textSQL creates tierdb.fts, run at bootstrap: p is {configuration,
// class A text, B, C, D}; NULL for a document without indexed text.
const textSQL = `
CREATE OR REPLACE FUNCTION ` + catalogSchema + `.fts(p text[]) RETURNS tsvector
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $f$
SELECT setweight(to_tsvector(p[1]::regconfig, coalesce(p[2], '')), 'A')
	|| setweight(to_tsvector(p[1]::regconfig, coalesce(p[3], '')), 'B')
	|| setweight(to_tsvector(p[1]::regconfig, coalesce(p[4], '')), 'C')
	|| setweight(to_tsvector(p[1]::regconfig, coalesce(p[5], '')), 'D')
$f$;`

// textLanguages maps MongoDB's text search languages (names and ISO codes)
// to PostgreSQL text search configurations.
var textLanguages = map[string]string{
	"none": "simple", "danish": "danish", "da": "danish", "dutch": "dutch", "nl": "dutch",
	"english": "english", "en": "english", "finnish": "finnish", "fi": "finnish",
	"french": "french", "fr": "french", "german": "german", "de": "german",
	"hungarian": "hungarian", "hu": "hungarian", "italian": "italian", "it": "italian",
	"norwegian": "norwegian", "nb": "norwegian", "portuguese": "portuguese", "pt": "portuguese",
	"romanian": "romanian", "ro": "romanian", "russian": "russian", "ru": "russian",
	"spanish": "spanish", "es": "spanish", "swedish": "swedish", "sv": "swedish",
	"turkish": "turkish", "tr": "turkish",
}

// TextConfig is the PostgreSQL configuration of a MongoDB language name.
func TextConfig(language string) (string, bool) {
	cfg, ok := textLanguages[strings.ToLower(language)]
	return cfg, ok
}

// classes maps each distinct weight to a class 0..3 (A..D), heaviest first.
func (t *TextIndex) classes() map[int32]int {
	var ws []int32
	seen := map[int32]bool{}
	for _, w := range t.Weights {
		if !seen[w.Weight] {
			seen[w.Weight] = true
			ws = append(ws, w.Weight)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] > ws[j] })
	out := map[int32]int{}
	for i, w := range ws {
		out[w] = i
	}
	return out
}

// rankWeights is ts_rank's {D, C, B, A} weights: the class weights scaled
// so the heaviest is 1, as PostgreSQL requires weights within [0, 1].
func (t *TextIndex) rankWeights() []float32 {
	out := make([]float32, 4)
	var top int32 = 1
	for _, w := range t.Weights {
		top = max(top, w.Weight)
	}
	for w, class := range t.classes() {
		out[3-class] = float32(w) / float32(top)
	}
	return out
}

// textValue is the text index column's input for doc: {configuration, A,
// B, C, D}, or nil when the document has no indexed string.
func textValue(ix *Index, doc bson.D) ([]*string, error) {
	if !ix.member(doc) {
		return nil, nil
	}
	t := ix.Text
	lang := t.DefaultLanguage
	if v, ok := query.Lookup(doc, t.LanguageOverride); ok {
		s, isString := v.(string)
		if !isString {
			return nil, newErr(ErrBadLanguage, "language override must be of type String")
		}
		lang = s
	}
	cfg, ok := TextConfig(lang)
	if !ok {
		return nil, newErr(ErrBadLanguage, "language override unsupported: %s", lang)
	}
	classes := t.classes()
	var parts [4][]string
	weightOf := map[string]int32{}
	for _, w := range t.Weights {
		weightOf[w.Field] = w.Weight
	}
	found := false
	add := func(w int32, s string) {
		if s != "" {
			parts[classes[w]] = append(parts[classes[w]], foldText(s))
			found = true
		}
	}
	if w, all := weightOf["$**"]; all {
		walkStrings(doc, "", func(path, s string) {
			if fw, ok := weightOf[path]; ok {
				add(fw, s)
			} else {
				add(w, s)
			}
		})
	} else {
		for _, tw := range t.Weights {
			for _, v := range query.LookupAll(doc, tw.Field) {
				eachString(v, func(s string) { add(tw.Weight, s) })
			}
		}
	}
	if !found {
		return nil, nil
	}
	out := []*string{&cfg, nil, nil, nil, nil}
	for i, p := range parts {
		if len(p) > 0 {
			s := strings.Join(p, "\n")
			out[i+1] = &s
		}
	}
	return out, nil
}

// eachString calls fn with v if it is a string, or with each string of
// the array v.
func eachString(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case bson.A:
		for _, e := range x {
			if s, ok := e.(string); ok {
				fn(s)
			}
		}
	}
}

// walkStrings calls fn with every string in doc and its dotted path
// (array positions left out).
func walkStrings(v any, path string, fn func(path, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case bson.D:
		for _, e := range x {
			p := e.Key
			if path != "" {
				p = path + "." + e.Key
			}
			walkStrings(e.Value, p, fn)
		}
	case bson.A:
		for _, e := range x {
			walkStrings(e, path, fn)
		}
	}
}

// foldText removes diacritics (MongoDB's version 3 text indexes are
// diacritic insensitive); PostgreSQL's parser lowercases.
func foldText(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		return s
	}
	return out
}

// FoldText is foldText for search strings.
func FoldText(s string) string { return foldText(s) }

// TextSearch is a $text query, parsed: positive terms (any may match),
// phrases (all must match) and negated terms (none may match), in the
// PostgreSQL configuration of the query's language.
type TextSearch struct {
	Config  string
	Terms   []string
	Phrases []string
	Negated []string
	// NegatedPhrases must not appear.
	NegatedPhrases []string
	// Where and Args prefilter the other conditions (query.Filter.SQL,
	// numbered from $1).
	Where string
	Args  []any
	// ByScore orders the rows by descending score; Limit bounds them (0:
	// none).
	ByScore bool
	Limit   int
	// MaxBytes bounds the documents returned (ErrMemoryLimit beyond).
	MaxBytes int
}

// TextRow is a document found by a text search, with its score.
type TextRow struct {
	Row
	Score float64
}

// tsquery builds the match and ranking tsqueries.
func (q *TextSearch) tsquery(args *[]any) (match, rank string) {
	arg := func(v any) string {
		*args = append(*args, v)
		return fmt.Sprintf("$%d", len(*args))
	}
	cfg := arg(q.Config) + "::regconfig"
	var terms, phrases, all []string
	for _, t := range q.Terms {
		p := "plainto_tsquery(" + cfg + ", " + arg(foldText(t)) + ")"
		terms = append(terms, p)
		all = append(all, p)
	}
	for _, ph := range q.Phrases {
		p := "phraseto_tsquery(" + cfg + ", " + arg(foldText(ph)) + ")"
		phrases = append(phrases, p)
		all = append(all, p)
	}
	// tsquery_and/or/not are the functions of &&, || and !!.
	join := func(fn string, qs []string) string {
		out := qs[0]
		for _, q := range qs[1:] {
			out = fn + "(" + out + ", " + q + ")"
		}
		return out
	}
	switch {
	case len(phrases) > 0:
		match = join("tsquery_and", phrases)
	case len(terms) > 0:
		match = join("tsquery_or", terms)
	default:
		match = "''::tsquery"
	}
	for _, n := range q.Negated {
		match = "tsquery_and(" + match + ", tsquery_not(plainto_tsquery(" + cfg + ", " + arg(foldText(n)) + ")))"
	}
	for _, n := range q.NegatedPhrases {
		match = "tsquery_and(" + match + ", tsquery_not(phraseto_tsquery(" + cfg + ", " + arg(foldText(n)) + ")))"
	}
	rank = match
	if len(all) > 0 {
		rank = join("tsquery_or", all)
	}
	return match, rank
}

// SearchText runs a text search through ix and returns the matching rows
// with their scores.
func (s *Store) SearchText(ctx context.Context, on On, c *Collection, ix *Index, q TextSearch) ([]TextRow, error) {
	args := append([]any(nil), q.Args...)
	match, rank := q.tsquery(&args)
	col := quoteIdent(ix.Column)
	weights := ix.Text.rankWeights()
	args = append(args, weights)
	sql := `SELECT _id, doc, ts_rank($` + fmt.Sprint(len(args)) + `::real[], ` + col + `, ` + rank + `) AS score FROM ` + c.table +
		` WHERE ` + col + ` @@ ` + match
	if q.Where != "" && q.Where != "TRUE" {
		sql += ` AND (` + q.Where + `)`
	}
	if q.ByScore {
		sql += ` ORDER BY score DESC, _id`
	} else {
		sql += ` ORDER BY _id`
	}
	if q.Limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.readQ(ctx, on).Query(ctx, sql, args...)
	if err != nil {
		return nil, s.readError(ctx, on, c, err)
	}
	defer rows.Close()
	var out []TextRow
	size := 0
	for rows.Next() {
		var tr TextRow
		var score float32
		if err := rows.Scan(&tr.Key, &tr.Doc, &score); err != nil {
			return nil, s.readError(ctx, on, c, err)
		}
		tr.Score = float64(score)
		size += len(tr.Doc) + len(tr.Key)
		if q.MaxBytes > 0 && size > q.MaxBytes {
			return nil, newErr(ErrMemoryLimit, "text search results exceed the memory limit of %d bytes; add a limit", q.MaxBytes)
		}
		out = append(out, tr)
	}
	return out, s.readError(ctx, on, c, rows.Err())
}

// TextIndexOf returns the collection's text index that queries may use.
func (c *Collection) TextIndexOf() *Index {
	for i := range c.Indexes {
		if ix := &c.Indexes[i]; ix.Text != nil && !ix.Hidden {
			return ix
		}
	}
	return nil
}
