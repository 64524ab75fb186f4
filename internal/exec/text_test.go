package exec

import (
	"context"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/update"
)

func textCol() *storage.Collection {
	col := testCol()
	col.Indexes = append(col.Indexes, storage.Index{Name: "body_text", Keys: []storage.IndexKey{{Field: "body", Text: true}},
		Text: &storage.TextIndex{DefaultLanguage: "english", Weights: []storage.TextWeight{{Field: "body", Weight: 1}}}, Column: "k9"})
	return col
}

func textDocs() []bson.D {
	return []bson.D{
		{{Key: "_id", Value: int32(1)}, {Key: "body", Value: "tea"}, {Key: "n", Value: int32(3)}},
		{{Key: "_id", Value: int32(2)}, {Key: "body", Value: "tea tea tea"}, {Key: "n", Value: int32(1)}},
		{{Key: "_id", Value: int32(3)}, {Key: "body", Value: "coffee"}, {Key: "n", Value: int32(2)}},
		{{Key: "_id", Value: int32(4)}, {Key: "body", Value: "tea coffee"}, {Key: "n", Value: int32(2)}},
		{{Key: "_id", Value: int32(5)}, {Key: "body", Value: "milk"}, {Key: "n", Value: int32(9)}},
	}
}

func textSpec(t *testing.T, filter bson.D, sort []TextSortKey, skip, limit int64, terms ...string) *TextSpec {
	t.Helper()
	f, err := query.ParseFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	return &TextSpec{Terms: terms, Filter: f, Empty: len(filter) == 0, Sort: sort, Skip: skip, Limit: limit}
}

func resultIDs(rs []TextResult) []any {
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i], _ = lookupField(r.Doc, "_id")
	}
	return out
}

func TestTextSearchOrdersFiltersAndLimits(t *testing.T) {
	ctx := context.Background()
	byScore := []TextSortKey{{Score: true}}
	byN := []TextSortKey{{By: mustSort(t, bson.D{{Key: "n", Value: int32(1)}})}}
	byNThenScore := append(byN[:1:1], TextSortKey{Score: true})
	cases := []struct {
		name        string
		filter      bson.D
		sort        []TextSortKey
		skip, limit int64
		terms       []string
		want        []any
		pushedLimit int // the limit storage was asked for
		byScore     bool
	}{
		{"any term, _id order", nil, nil, 0, 0, []string{"tea", "coffee"}, []any{int32(1), int32(2), int32(3), int32(4)}, 0, false},
		{"by score", nil, byScore, 0, 0, []string{"tea", "coffee"}, []any{int32(2), int32(4), int32(1), int32(3)}, 0, true},
		{"by score, limit pushed", nil, byScore, 1, 2, []string{"tea", "coffee"}, []any{int32(4), int32(1)}, 3, true},
		{"by a field", nil, byN, 0, 0, []string{"tea", "coffee"}, []any{int32(2), int32(3), int32(4), int32(1)}, 0, false},
		{"by a field, then score", nil, byNThenScore, 0, 0, []string{"tea", "coffee"}, []any{int32(2), int32(4), int32(3), int32(1)}, 0, false},
		{"rest of the filter rechecked", bson.D{{Key: "n", Value: int32(2)}}, nil, 0, 0, []string{"tea", "coffee"}, []any{int32(3), int32(4)}, 0, false},
		{"a filter keeps the limit in process", bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: int32(2)}}}}, byScore, 0, 1, []string{"tea"}, []any{int32(1)}, 0, true},
		{"skip past the end", nil, nil, 10, 0, []string{"tea"}, []any{}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newFakeStore(t, textDocs()...)
			r := &TextRead{Store: st, Col: textCol(), Spec: textSpec(t, c.filter, c.sort, c.skip, c.limit, c.terms...)}
			got, err := r.Search(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ids := resultIDs(got); !reflect.DeepEqual(ids, c.want) {
				t.Fatalf("got %v, want %v", ids, c.want)
			}
			q := st.searches[0]
			if q.Limit != c.pushedLimit || q.ByScore != c.byScore || q.Config != "english" {
				t.Fatalf("storage asked for limit %d, by score %v, config %q", q.Limit, q.ByScore, q.Config)
			}
		})
	}
}

func TestTextOpenProjectsScores(t *testing.T) {
	ts := textSpec(t, nil, []TextSortKey{{Score: true}}, 0, 0, "tea")
	var err error
	if ts.Proj, err = update.ParseProjection(bson.D{{Key: "body", Value: int32(0)}}, ts.Filter); err != nil {
		t.Fatal(err)
	}
	ts.ScoreFields = []string{"score"}
	src, err := (&TextRead{Store: newFakeStore(t, textDocs()...), Col: textCol(), Spec: ts}).Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	batch, done, err := src.Next(context.Background(), storage.On{}, 0)
	if err != nil || !done || len(batch) != 3 {
		t.Fatalf("%d documents, done %v, %v", len(batch), done, err)
	}
	first, _ := bsonx.Decode(batch[0])
	want := bson.D{{Key: "_id", Value: int32(2)}, {Key: "n", Value: int32(1)}, {Key: "score", Value: 3.0}}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("first %v, want %v", first, want)
	}
}

func TestTextSearchRefusals(t *testing.T) {
	ctx := context.Background()
	_, err := (&TextRead{Store: newFakeStore(t, textDocs()...), Col: testCol(), Spec: textSpec(t, nil, nil, 0, 0, "tea")}).Search(ctx)
	if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.IndexNotFound {
		t.Fatalf("no text index: %v", err)
	}
	old := textBytes
	textBytes = 100
	defer func() { textBytes = old }()
	_, err = (&TextRead{Store: newFakeStore(t, textDocs()...), Col: textCol(), Spec: textSpec(t, nil, nil, 0, 0, "tea")}).Search(ctx)
	if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.QueryExceededMemoryLimit {
		t.Fatalf("past the memory limit: %v", err)
	}
}
