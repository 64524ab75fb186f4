package commands

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParseSearchString(t *testing.T) {
	cases := []struct {
		in                                      string
		terms, phrases, negated, negatedPhrases string
	}{
		{`coffee tea`, `[coffee tea]`, `[]`, `[]`, `[]`},
		{`  "green tea"  leaf `, `[leaf]`, `[green tea]`, `[]`, `[]`},
		{`coffee -tea --milk -`, `[coffee]`, `[]`, `[tea milk]`, `[]`},
		{`coffee -"green tea" "unclosed`, `[coffee]`, `[unclosed]`, `[]`, `[green tea]`},
		{`a-b "" x"y"`, `[a-b x]`, `[y]`, `[]`, `[]`},
	}
	for _, c := range cases {
		terms, phrases, negated, negatedPhrases := parseSearchString(c.in)
		got := fmt.Sprint(terms) + fmt.Sprint(phrases) + fmt.Sprint(negated) + fmt.Sprint(negatedPhrases)
		want := c.terms + c.phrases + c.negated + c.negatedPhrases
		if got != want {
			t.Errorf("%q: got %s, want %s", c.in, got, want)
		}
	}
}

func TestSplitText(t *testing.T) {
	text := bson.D{{Key: "$search", Value: "x"}}
	rest, q, err := splitText(bson.D{{Key: "a", Value: 1}, {Key: "$text", Value: text}})
	if err != nil || q == nil || fmt.Sprint(rest) != fmt.Sprint(bson.D{{Key: "a", Value: 1}}) {
		t.Fatalf("top level: %v %v %v", rest, q, err)
	}
	rest, q, err = splitText(bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "$text", Value: text}}, bson.D{{Key: "b", Value: 2}}}}})
	if err != nil || q == nil || len(rest) != 1 || len(rest[0].Value.(bson.A)) != 1 {
		t.Fatalf("in $and: %v %v %v", rest, q, err)
	}
	if _, q, _ := splitText(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "$text", Value: text}}}}}); q != nil {
		t.Error("$text inside $or was taken out; the filter parser must refuse it")
	}
	if _, _, err := splitText(bson.D{{Key: "$text", Value: bson.D{{Key: "$language", Value: "english"}}}}); err == nil {
		t.Error("$text without $search accepted")
	}
}
