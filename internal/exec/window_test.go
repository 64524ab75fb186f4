package exec

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestSetWindowFields(t *testing.T) {
	input := docs(t,
		`{"_id":1,"s":"b","d":3,"q":10}`,
		`{"_id":2,"s":"a","d":1,"q":5}`,
		`{"_id":3,"s":"a","d":2,"q":5}`,
		`{"_id":4,"s":"b","d":1,"q":7}`,
		`{"_id":5,"s":"a","d":3,"q":8}`,
	)
	cases := []struct {
		spec string
		want []string
	}{
		{`{"partitionBy":"$s","sortBy":{"d":1},"output":{"run":{"$sum":"$q","window":{"documents":["unbounded","current"]}},"all":{"$sum":"$q"},"n":{"$documentNumber":{}}}}`,
			[]string{`{"_id":2,"run":5,"all":18,"n":1}`, `{"_id":3,"run":10,"all":18,"n":2}`, `{"_id":5,"run":18,"all":18,"n":3}`,
				`{"_id":4,"run":7,"all":17,"n":1}`, `{"_id":1,"run":17,"all":17,"n":2}`}},
		{`{"sortBy":{"q":1},"output":{"r":{"$rank":{}},"dr":{"$denseRank":{}},"prev":{"$shift":{"output":"$_id","by":-1,"default":"none"}}}}`,
			[]string{`{"_id":2,"r":1,"dr":1,"prev":"none"}`, `{"_id":3,"r":1,"dr":1,"prev":2}`, `{"_id":4,"r":3,"dr":2,"prev":3}`,
				`{"_id":5,"r":4,"dr":3,"prev":4}`, `{"_id":1,"r":5,"dr":4,"prev":5}`}},
		{`{"sortBy":{"_id":1},"output":{"avg":{"$avg":"$q","window":{"documents":[-1,1]}},"ids":{"$push":"$_id","window":{"documents":[0,1]}},"c":{"$count":{},"window":{"documents":["current","unbounded"]}}}}`,
			[]string{`{"_id":1,"avg":7.5,"ids":[1,2],"c":5}`, `{"_id":2,"avg":6.666666666666667,"ids":[2,3],"c":4}`, `{"_id":3,"avg":5.666666666666667,"ids":[3,4],"c":3}`,
				`{"_id":4,"avg":6.666666666666667,"ids":[4,5],"c":2}`, `{"_id":5,"avg":7.5,"ids":[5],"c":1}`}},
	}
	for _, c := range cases {
		var fields []string
		spec := parse(t, `{"$setWindowFields":`+c.spec+`}`)
		for _, e := range spec[0].Value.(bson.D) {
			if e.Key == "output" {
				for _, o := range e.Value.(bson.D) {
					fields = append(fields, `"`+o.Key+`":1`)
				}
			}
		}
		got, err := run(t, &Env{}, input, spec, parse(t, `{"$project":{`+strings.Join(fields, ",")+`}}`))
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", c.spec, strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
		}
	}
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		{`{"sortBy":{"d":1},"output":{"x":{"$sum":"$q","window":{"range":[-1,1]}}}}`, mongoerr.NotImplemented},
		{`{"sortBy":{"d":1},"output":{"x":{"$expMovingAvg":{"input":"$q","N":2}}}}`, mongoerr.NotImplemented},
		{`{"output":{"x":{"$rank":{}}}}`, mongoerr.FailedToParse},
		{`{"output":{"x":{"$sum":"$q","window":{"documents":[-1,0]}}}}`, mongoerr.FailedToParse},
		{`{"sortBy":{"d":1},"output":{"x":{"$sum":"$q","window":{"documents":[1,0]}}}}`, mongoerr.FailedToParse},
		{`{"sortBy":{"d":1},"output":{"x":{"$frob":1}}}`, mongoerr.FailedToParse},
		{`{"sortBy":{"d":1}}`, mongoerr.Location40414},
	} {
		if _, err := Build([]bson.D{parse(t, `{"$setWindowFields":`+c.spec+`}`)}, &docsSink{}, &Env{}); !hasCode(err, c.code) {
			t.Errorf("%s: got %v, want %d", c.spec, err, c.code)
		}
	}
}
