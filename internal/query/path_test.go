package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestLookup(t *testing.T) {
	doc := ej(t, `{"a": {"b": [10, {"c": 20}], "0": "zero"}, "x": null, "s": "str"}`)
	cases := []struct {
		path  string
		want  string // {"v": <value>} or "" when not found
		found bool
	}{
		{"a.b.0", `{"v": 10}`, true},
		{"a.b.1.c", `{"v": 20}`, true},
		{"a.0", `{"v": "zero"}`, true},
		{"x", `{"v": null}`, true},
		{"a.b.2", "", false},
		{"a.b.c", "", false}, // would fan out
		{"a.b.01", "", false},
		{"s.length", "", false},
		{"missing", "", false},
	}
	for _, c := range cases {
		got, found := Lookup(doc, c.path)
		if found != c.found {
			t.Errorf("Lookup(%q) found = %v, want %v", c.path, found, c.found)
			continue
		}
		if found && Compare(got, ej(t, c.want)[0].Value) != 0 {
			t.Errorf("Lookup(%q) = %v, want %s", c.path, got, c.want)
		}
	}
}

func TestLookupAll(t *testing.T) {
	doc := ej(t, `{"a": [{"b": 1}, {"b": [2, 3]}, {"c": 4}, 5, [{"b": 6}]], "d": {"e": 7}}`)
	cases := []struct {
		path string
		want string // {"v": [values...]}
	}{
		{"a.b", `{"v": [1, [2, 3]]}`},
		{"a.1.b", `{"v": [[2, 3]]}`},
		{"a.3", `{"v": [5]}`},
		{"d.e", `{"v": [7]}`},
		{"a.c", `{"v": [4]}`},
		{"nope", `{"v": []}`},
	}
	for _, c := range cases {
		got := bson.A(LookupAll(doc, c.path))
		if got == nil {
			got = bson.A{}
		}
		if want := ej(t, c.want)[0].Value; Compare(got, want) != 0 {
			t.Errorf("LookupAll(%q) = %v, want %v", c.path, got, want)
		}
	}
}
