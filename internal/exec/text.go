package exec

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

// TextSpec is a find, count or pipeline input with $text: the search
// (storage runs it on the collection's text index, PostgreSQL full-text
// search) and the rest of the query.
type TextSpec struct {
	// Language is the $language, "" for the index's default.
	Language string
	// Terms (any of which may match), phrases (all must appear), negated
	// terms and phrases (none may appear), as $search splits them.
	Terms, Phrases, Negated, NegatedPhrases []string
	// Filter is the rest of the filter, Empty when there is none.
	Filter *query.Filter
	Empty  bool
	Sort   []TextSortKey
	Proj   *update.Projection
	// ScoreFields are the projection's {field: {$meta: "textScore"}}.
	ScoreFields []string
	Skip, Limit int64
}

// TextSortKey is one key of a sort with text scores: {$meta: "textScore"}
// (Score, highest first) or an ordinary field (By).
type TextSortKey struct {
	Score bool
	By    query.Sort
}

// TextResult is one matching document with its score.
type TextResult struct {
	Raw   bson.Raw
	Doc   bson.D
	Score float64
}

// TextRead is a $text search of a collection, as Read is a plain read.
type TextRead struct {
	Store Store
	On    storage.On
	Col   *storage.Collection
	Spec  *TextSpec
}

// errTextMemory is the error of matches past the memory limit.
func errTextMemory() error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimit, "$text results exceeded the memory limit of 104857600 bytes; add a limit or a narrower search")
}

// textBytes is the memory limit of the matches a search holds (a
// variable for tests).
var textBytes = MaxMemoryBytes

// Search runs the search and returns the matches in the requested order,
// skipped and limited. Every match is held (to sort them by score), as
// BSON and decoded, within the in-memory sort limit; storage orders by
// score and limits itself when that is the whole sort and nothing else
// filters.
func (r *TextRead) Search(ctx context.Context) ([]TextResult, error) {
	ts := r.Spec
	ix := r.Col.TextIndexOf()
	if ix == nil {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	lang := ts.Language
	if lang == "" {
		lang = ix.Text.DefaultLanguage
	}
	cfg, _ := storage.TextConfig(lang)
	where, args := ts.Filter.SQL(r.Col.KeyColumns(), 1)
	q := storage.TextSearch{Config: cfg, Terms: ts.Terms, Phrases: ts.Phrases, Negated: ts.Negated, NegatedPhrases: ts.NegatedPhrases,
		Where: where, Args: args, MaxBytes: textBytes}
	scoreOnly := len(ts.Sort) == 1 && ts.Sort[0].Score
	q.ByScore = scoreOnly
	if ts.Empty && ts.Limit > 0 && (len(ts.Sort) == 0 || scoreOnly) {
		q.Limit = int(min(ts.Skip+ts.Limit, 1<<30))
	}
	rows, err := r.Store.SearchText(ctx, r.On, r.Col, ix, q)
	if err != nil {
		return nil, err
	}
	var out []TextResult
	held := 0
	for _, row := range rows {
		d, err := bsonx.Decode(row.Doc)
		if err != nil {
			return nil, errCorrupt()
		}
		if held += len(row.Doc) + DocMemory(d); held > textBytes {
			return nil, errTextMemory()
		}
		if !ts.Empty {
			ok, err := ts.Filter.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, TextResult{Raw: row.Doc, Doc: d, Score: row.Score})
	}
	if len(ts.Sort) > 0 && !scoreOnly {
		slices.SortStableFunc(out, func(a, b TextResult) int {
			for _, k := range ts.Sort {
				if k.Score {
					if a.Score != b.Score {
						if a.Score > b.Score {
							return -1
						}
						return 1
					}
					continue
				}
				if c := k.By.Compare(a.Doc, b.Doc); c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if ts.Skip >= int64(len(out)) {
		return nil, nil
	}
	out = out[ts.Skip:]
	if ts.Limit > 0 && int64(len(out)) > ts.Limit {
		out = out[:ts.Limit]
	}
	return out, nil
}

// Open runs the search and serves its matches as a find's cursor does,
// projected, with their scores in the projection's score fields.
func (r *TextRead) Open(ctx context.Context) (Source, error) {
	results, err := r.Search(ctx)
	if err != nil {
		return nil, err
	}
	ts := r.Spec
	docs := make([]bson.Raw, len(results))
	for i, res := range results {
		docs[i] = res.Raw
		if ts.Proj == nil && len(ts.ScoreFields) == 0 {
			continue
		}
		d := res.Doc
		if ts.Proj != nil {
			if d, err = ts.Proj.Apply(d); err != nil {
				return nil, err
			}
		}
		for _, f := range ts.ScoreFields {
			d = slices.DeleteFunc(slices.Clone(d), func(e bson.E) bool { return e.Key == f })
			d = append(d, bson.E{Key: f, Value: res.Score})
		}
		if docs[i], err = bsonx.Marshal(d); err != nil {
			return nil, err
		}
	}
	return &SliceSource{Docs: docs}, nil
}
