package query

import (
	"math"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
)

func rawTestValue(r *rand.Rand, depth int) any {
	switch r.Intn(14) {
	case 0:
		return int32(r.Intn(7) - 2)
	case 1:
		return int64(r.Intn(7) - 2)
	case 2:
		return float64(r.Intn(14)-4) / 2
	case 3:
		return []any{"a", "b", "", "ab", "B"}[r.Intn(5)]
	case 4:
		return nil
	case 5:
		if depth < 2 {
			a := bson.A{}
			for range r.Intn(3) {
				a = append(a, rawTestValue(r, depth+1))
			}
			return a
		}
		return int32(1)
	case 6:
		if depth < 2 {
			return bson.D{{Key: "b", Value: rawTestValue(r, depth+1)}, {Key: "c", Value: int32(r.Intn(3))}}
		}
		return "deep"
	case 7:
		return r.Intn(2) == 0
	case 8:
		return bson.DateTime(r.Intn(3))
	case 9:
		return math.NaN()
	case 10:
		return bson.NewDecimal128(0, uint64(r.Intn(4)))
	case 11:
		return bson.Regex{Pattern: "a", Options: ""}
	case 12:
		return bson.MinKey{}
	}
	return int32(r.Intn(4))
}

func TestMatchRawAgreesWithMatch(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	filters := []bson.D{
		{},
		{{Key: "a", Value: int32(1)}},
		{{Key: "a", Value: nil}},
		{{Key: "a", Value: bson.D{{Key: "$gt", Value: int32(0)}}}},
		{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1.5}, {Key: "$lt", Value: int64(3)}}}},
		{{Key: "a", Value: bson.D{{Key: "$ne", Value: "a"}}}},
		{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{int32(1), "b", nil}}}}},
		{{Key: "a", Value: bson.D{{Key: "$nin", Value: bson.A{int32(1), "b"}}}}},
		{{Key: "a", Value: bson.D{{Key: "$exists", Value: false}}}},
		{{Key: "a", Value: bson.D{{Key: "$type", Value: "string"}}}},
		{{Key: "a", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$lt", Value: int32(1)}}}}}},
		{{Key: "a", Value: bson.Regex{Pattern: "^a"}}},
		{{Key: "a", Value: bson.D{{Key: "$size", Value: int32(1)}}}},
		{{Key: "a", Value: bson.D{{Key: "$mod", Value: bson.A{int32(2), int32(0)}}}}},
		{{Key: "a.b", Value: bson.D{{Key: "$lte", Value: int32(1)}}}},
		{{Key: "a.c", Value: int32(1)}, {Key: "b", Value: bson.D{{Key: "$gt", Value: int32(0)}}}},
		{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "b", Value: bson.D{{Key: "$lt", Value: int32(0)}}}}}}},
		{{Key: "$nor", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "b", Value: nil}}}}},
		{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: math.NaN()}}}}}}},
		{{Key: "a", Value: bson.D{{Key: "$gte", Value: math.NaN()}}}},
		{{Key: "a", Value: bson.D{{Key: "$lt", Value: bson.MaxKey{}}}}},
		{{Key: "a", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$gt", Value: int32(0)}}}}}},
	}
	answered := 0
	for _, fd := range filters {
		f, err := ParseFilter(fd)
		if err != nil {
			t.Fatalf("%v: %v", fd, err)
		}
		for range 400 {
			doc := bson.D{{Key: "_id", Value: int32(1)}}
			for _, k := range []string{"a", "b"} {
				if r.Intn(6) > 0 {
					doc = append(doc, bson.E{Key: k, Value: rawTestValue(r, 0)})
				}
			}
			raw, err := bson.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := f.MatchRaw(raw)
			if !ok {
				continue
			}
			answered++
			if want := f.Match(doc); m != want {
				t.Fatalf("filter %v doc %v: MatchRaw %v, Match %v", fd, doc, m, want)
			}
		}
	}
	if answered < len(filters)*400/3 {
		t.Fatalf("MatchRaw answered only %d of %d", answered, len(filters)*400)
	}
}

func TestMatchRawDefersArraysAndExpr(t *testing.T) {
	f, _ := ParseFilter(bson.D{{Key: "a", Value: int32(1)}})
	raw, _ := bson.Marshal(bson.D{{Key: "a", Value: bson.A{int32(1)}}})
	if _, ok := f.MatchRaw(raw); ok {
		t.Fatal("an array must be left to Match")
	}
	raw, _ = bson.Marshal(bson.D{{Key: "a", Value: int32(1)}})
	if m, ok := f.MatchRaw(raw); !ok || !m {
		t.Fatal("a scalar must be answered")
	}
}

func benchDoc() []byte {
	raw, _ := bson.Marshal(bson.D{
		{Key: "_id", Value: int32(12345)}, {Key: "a", Value: int32(734512)}, {Key: "b", Value: int32(812)},
		{Key: "g", Value: int32(3)}, {Key: "email", Value: "user012345.734512@example.com"},
		{Key: "name", Value: "n123456789"}, {Key: "pad", Value: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
	})
	return raw
}

// The per-document cost of an unindexed {b: {$gt: 500}} on the benchmark's
// documents: on the bytes, and decoded first (what every scan did before).
func BenchmarkMatchRaw(b *testing.B) {
	f, _ := ParseFilter(bson.D{{Key: "b", Value: bson.D{{Key: "$gt", Value: int32(500)}}}})
	raw := benchDoc()
	b.ReportAllocs()
	for b.Loop() {
		if m, ok := f.MatchRaw(raw); !ok || !m {
			b.Fatal("no match")
		}
	}
}

func BenchmarkDecodeAndMatch(b *testing.B) {
	f, _ := ParseFilter(bson.D{{Key: "b", Value: bson.D{{Key: "$gt", Value: int32(500)}}}})
	raw := benchDoc()
	b.ReportAllocs()
	for b.Loop() {
		d, err := bsonx.Decode(raw)
		if err != nil || !f.Match(d) {
			b.Fatal("no match")
		}
	}
}

func TestSortRawValuesAgreeWithCompare(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var docs []bson.D
	var raws [][]byte
	for i := range 300 {
		doc := bson.D{{Key: "_id", Value: int32(i)}}
		for _, k := range []string{"a", "b"} {
			if r.Intn(6) > 0 {
				doc = append(doc, bson.E{Key: k, Value: rawTestValue(r, 0)})
			}
		}
		raw, err := bson.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		docs, raws = append(docs, doc), append(raws, raw)
	}
	for _, spec := range []bson.D{
		{{Key: "a", Value: int32(1)}}, {{Key: "a", Value: int32(-1)}, {Key: "b", Value: int32(1)}}, {{Key: "a.b", Value: int32(-1)}},
	} {
		s, err := ParseSort(spec)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([][]any, len(docs))
		for i := range docs {
			if v, ok := s.RawValues(raws[i]); ok {
				vals[i] = v
			} else {
				vals[i] = s.Values(docs[i])
			}
		}
		for i := range docs {
			for j := range docs {
				if got, want := s.CompareValues(vals[i], vals[j]), s.Compare(docs[i], docs[j]); got != want {
					t.Fatalf("%v: %v vs %v: CompareValues %d, Compare %d", spec, docs[i], docs[j], got, want)
				}
			}
		}
	}
}
