package storage

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestTextValue(t *testing.T) {
	ix := &Index{Name: "t", Text: &TextIndex{
		Weights:          []TextWeight{{Field: "title", Weight: 10}, {Field: "body", Weight: 1}, {Field: "tags", Weight: 10}},
		DefaultLanguage:  "english",
		LanguageOverride: "lang",
	}}
	str := func(p []*string) string {
		var out []string
		for _, s := range p {
			if s == nil {
				out = append(out, "<nil>")
			} else {
				out = append(out, *s)
			}
		}
		return fmt.Sprint(out)
	}
	doc := bson.D{{Key: "title", Value: "Café"}, {Key: "body", Value: "naïve text"}, {Key: "tags", Value: bson.A{"a", 1, "b"}}}
	v, err := textValue(ix, doc)
	if err != nil || str(v) != "[english Cafe\na\nb naive text <nil> <nil>]" {
		t.Errorf("got %s %v", str(v), err)
	}
	v, err = textValue(ix, append(doc, bson.E{Key: "lang", Value: "es"}))
	if err != nil || *v[0] != "spanish" {
		t.Errorf("language override: %s %v", str(v), err)
	}
	if _, err := textValue(ix, append(doc, bson.E{Key: "lang", Value: "klingon"})); !IsCode(err, ErrBadLanguage) {
		t.Errorf("unknown language: %v", err)
	}
	if v, err := textValue(ix, bson.D{{Key: "title", Value: 5}}); v != nil || err != nil {
		t.Errorf("no strings: %s %v", str(v), err)
	}
	if w := ix.Text.rankWeights(); fmt.Sprint(w) != "[0 0 0.1 1]" {
		t.Errorf("rank weights %v", w)
	}
	all := &Index{Text: &TextIndex{Weights: []TextWeight{{Field: "$**", Weight: 1}, {Field: "a.b", Weight: 3}}, DefaultLanguage: "none", LanguageOverride: "language"}}
	v, _ = textValue(all, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: "x"}, {Key: "c", Value: "y"}}}, {Key: "z", Value: bson.A{"w"}}})
	if str(v) != "[simple x y\nw <nil> <nil>]" {
		t.Errorf("wildcard: %s", str(v))
	}
}

func TestTextSearchSQL(t *testing.T) {
	q := TextSearch{Config: "english", Terms: []string{"a", "b"}, Phrases: []string{"c d"}, Negated: []string{"e"}, NegatedPhrases: []string{"f g"}}
	var args []any
	match, rank := q.tsquery(&args)
	wantMatch := "tsquery_and(tsquery_and(phraseto_tsquery($1::regconfig, $4), tsquery_not(plainto_tsquery($1::regconfig, $5))), tsquery_not(phraseto_tsquery($1::regconfig, $6)))"
	wantRank := "tsquery_or(tsquery_or(plainto_tsquery($1::regconfig, $2), plainto_tsquery($1::regconfig, $3)), phraseto_tsquery($1::regconfig, $4))"
	if match != wantMatch || rank != wantRank || fmt.Sprint(args) != "[english a b c d e f g]" {
		t.Errorf("match %s\nrank %s\nargs %v", match, rank, args)
	}
}
