package exec

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

func code(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}

func checkRun(t *testing.T, env *Env, input []bson.D, pipeline []string, want []string) {
	t.Helper()
	var stages []bson.D
	for _, s := range pipeline {
		stages = append(stages, parse(t, s))
	}
	got, err := run(t, env, input, stages...)
	if err != nil {
		t.Fatalf("%v: %v", pipeline, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%v:\n got  %v\n want %v", pipeline, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v: result %d:\n got  %s\n want %s", pipeline, i, got[i], want[i])
		}
	}
}

func TestRedact(t *testing.T) {
	input := docs(t,
		`{"_id":1,"level":1,"a":{"level":3,"secret":1},"b":[{"level":1,"x":1},{"level":5,"x":2},7],"c":{"level":2}}`,
		`{"_id":2,"level":4}`,
	)
	checkRun(t, &Env{}, input,
		[]string{`{"$redact":{"$cond":[{"$lte":["$level",2]},"$$DESCEND","$$PRUNE"]}}`},
		[]string{`{"_id":1,"level":1,"b":[{"level":1,"x":1},7],"c":{"level":2}}`})
	checkRun(t, &Env{}, input,
		[]string{`{"$redact":{"$cond":[{"$eq":["$level",1]},"$$KEEP","$$PRUNE"]}}`},
		[]string{`{"_id":1,"level":1,"a":{"level":3,"secret":1},"b":[{"level":1,"x":1},{"level":5,"x":2},7],"c":{"level":2}}`})
	// $$ROOT stays the top-level document while $$CURRENT descends.
	checkRun(t, &Env{}, input[:1],
		[]string{`{"$redact":{"$cond":[{"$eq":["$$ROOT._id",1]},"$$DESCEND","$$PRUNE"]}}`},
		[]string{`{"_id":1,"level":1,"a":{"level":3,"secret":1},"b":[{"level":1,"x":1},{"level":5,"x":2},7],"c":{"level":2}}`})
	_, err := run(t, &Env{}, input, parse(t, `{"$redact":"yes"}`))
	if code(err) != 17053 {
		t.Fatalf("a value other than the three variables: %v", err)
	}
	_, err = run(t, &Env{}, input, parse(t, `{"$project":{"x":"$$KEEP"}}`))
	if code(err) != mongoerr.FailedToParse {
		t.Fatalf("$$KEEP outside $redact: %v", err)
	}
}

func TestFillAndWindowFillers(t *testing.T) {
	input := docs(t,
		`{"_id":1,"t":1,"g":"a","v":10,"s":"x"}`,
		`{"_id":2,"t":2,"g":"a","v":null,"s":null}`,
		`{"_id":3,"t":3,"g":"a","s":"y"}`,
		`{"_id":4,"t":4,"g":"a","v":40}`,
		`{"_id":5,"t":5,"g":"a"}`,
		`{"_id":6,"t":1,"g":"b"}`,
		`{"_id":7,"t":2,"g":"b","v":7}`,
	)
	checkRun(t, &Env{}, input,
		[]string{`{"$fill":{"sortBy":{"t":1},"partitionByFields":["g"],"output":{"v":{"method":"linear"},"s":{"method":"locf"}}}}`, `{"$project":{"v":1,"s":1}}`},
		[]string{
			`{"_id":1,"v":10,"s":"x"}`, `{"_id":2,"v":20.0,"s":"x"}`, `{"_id":3,"s":"y","v":30.0}`,
			`{"_id":4,"v":40,"s":"y"}`, `{"_id":5,"v":null,"s":"y"}`,
			`{"_id":6,"v":null,"s":null}`, `{"_id":7,"v":7,"s":null}`,
		})
	checkRun(t, &Env{}, input[:3],
		[]string{`{"$fill":{"output":{"v":{"value":0},"s":{"value":{"$concat":["n-","$g"]}}}}}`, `{"$project":{"v":1,"s":1}}`},
		[]string{`{"_id":1,"v":10,"s":"x"}`, `{"_id":2,"v":0,"s":"n-a"}`, `{"_id":3,"s":"y","v":0}`})
	checkRun(t, &Env{}, input[:5],
		[]string{`{"$setWindowFields":{"sortBy":{"t":-1},"output":{"l":{"$locf":"$v"}}}}`, `{"$project":{"l":1}}`},
		[]string{`{"_id":5,"l":null}`, `{"_id":4,"l":40}`, `{"_id":3,"l":40}`, `{"_id":2,"l":40}`, `{"_id":1,"l":10}`})
	for _, c := range []struct {
		stage string
		want  mongoerr.Code
	}{
		{`{"$fill":{"output":{}}}`, 6050203},
		{`{"$fill":{"sortBy":{"t":1}}}`, mongoerr.Location40414},
		{`{"$fill":{"sortBy":{"t":1},"output":{"v":{"method":"locf","value":1}}}}`, 6050201},
		{`{"$fill":{"sortBy":{"t":1},"output":{"v":{"method":"nearest"}}}}`, 6050202},
		{`{"$fill":{"sortBy":{"t":1},"partitionBy":"$g","partitionByFields":["g"],"output":{"v":{"method":"locf"}}}}`, 6050204},
		{`{"$fill":{"sortBy":{"t":1},"output":{"v":1}}}`, 6050200},
		{`{"$fill":{"sortBy":{"t":1},"bogus":1,"output":{"v":{"method":"locf"}}}}`, mongoerr.UnknownField},
		{`{"$setWindowFields":{"sortBy":{"t":1,"g":1},"output":{"v":{"$linearFill":"$v"}}}}`, 605001},
		{`{"$setWindowFields":{"sortBy":{"t":1},"output":{"v":{"$locf":"$v","window":{"documents":[-1,0]}}}}}`, mongoerr.FailedToParse},
	} {
		if _, err := run(t, &Env{}, input, parse(t, c.stage)); code(err) != c.want {
			t.Errorf("%s: got %v, want %d", c.stage, err, c.want)
		}
	}
	// Runtime checks of $linearFill.
	for _, c := range []struct {
		input []bson.D
		want  mongoerr.Code
	}{
		{docs(t, `{"t":1,"v":1}`, `{"t":1,"v":2}`), 6050106},
		{docs(t, `{"t":1,"v":"x"}`), mongoerr.TypeMismatch},
		{docs(t, `{"t":"a","v":1}`), mongoerr.TypeMismatch},
	} {
		_, err := run(t, &Env{}, c.input, parse(t, `{"$setWindowFields":{"sortBy":{"t":1},"output":{"v":{"$linearFill":"$v"}}}}`))
		if code(err) != c.want {
			t.Errorf("%v: got %v, want %d", c.input, err, c.want)
		}
	}
}

func TestDensifyNumbers(t *testing.T) {
	input := docs(t,
		`{"g":"a","x":1}`, `{"g":"a","x":4}`, `{"g":"b","x":3}`, `{"g":"b","x":8}`, `{"g":"b"}`,
	)
	stage := func(rng string) string {
		return `{"$densify":{"field":"x","partitionByFields":["g"],"range":` + rng + `}}`
	}
	checkRun(t, &Env{}, input,
		[]string{stage(`{"step":2,"bounds":"partition"}`), `{"$project":{"_id":0}}`},
		[]string{`{"g":"a","x":1}`, `{"g":"a","x":3}`, `{"g":"a","x":4}`,
			`{"g":"b"}`, `{"g":"b","x":3}`, `{"g":"b","x":5}`, `{"g":"b","x":7}`, `{"g":"b","x":8}`})
	checkRun(t, &Env{}, input,
		[]string{stage(`{"step":3,"bounds":"full"}`), `{"$sort":{"g":1,"x":1}}`},
		[]string{`{"g":"a","x":1}`, `{"g":"a","x":4}`, `{"g":"a","x":7}`,
			`{"g":"b"}`, `{"g":"b","x":1}`, `{"g":"b","x":3}`, `{"g":"b","x":4}`, `{"g":"b","x":7}`, `{"g":"b","x":8}`})
	checkRun(t, &Env{}, input,
		[]string{stage(`{"step":2,"bounds":[2,7]}`), `{"$sort":{"g":1,"x":1}}`},
		[]string{`{"g":"a","x":1}`, `{"g":"a","x":2}`, `{"g":"a","x":4}`, `{"g":"a","x":6}`,
			`{"g":"b"}`, `{"g":"b","x":2}`, `{"g":"b","x":3}`, `{"g":"b","x":4}`, `{"g":"b","x":6}`, `{"g":"b","x":8}`})
	// No partitions, doubles, and explicit bounds with no document at all.
	checkRun(t, &Env{}, docs(t, `{"x":0.5}`, `{"x":1.75}`),
		[]string{`{"$densify":{"field":"x","range":{"step":0.5,"bounds":"full"}}}`},
		[]string{`{"x":0.5}`, `{"x":1.0}`, `{"x":1.5}`, `{"x":1.75}`})
	checkRun(t, &Env{}, nil,
		[]string{`{"$densify":{"field":"x","range":{"step":1,"bounds":[0,3]}}}`},
		[]string{`{"x":0}`, `{"x":1}`, `{"x":2}`})
}

func TestDensifyDates(t *testing.T) {
	input := docs(t, `{"d":{"$date":"2024-01-31T00:00:00Z"}}`, `{"d":{"$date":"2024-05-01T00:00:00Z"}}`)
	checkRun(t, &Env{}, input,
		[]string{`{"$densify":{"field":"d","range":{"step":1,"unit":"month","bounds":"full"}}}`},
		[]string{`{"d":{"$date":"2024-01-31T00:00:00Z"}}`, `{"d":{"$date":"2024-02-29T00:00:00Z"}}`,
			`{"d":{"$date":"2024-03-29T00:00:00Z"}}`, `{"d":{"$date":"2024-04-29T00:00:00Z"}}`, `{"d":{"$date":"2024-05-01T00:00:00Z"}}`})
	checkRun(t, &Env{}, docs(t, `{"d":{"$date":"2024-01-01T00:00:00Z"}}`),
		[]string{`{"$densify":{"field":"d","range":{"step":12,"unit":"hour","bounds":[{"$date":"2024-01-01T00:00:00Z"},{"$date":"2024-01-02T00:00:01Z"}]}}}`},
		[]string{`{"d":{"$date":"2024-01-01T00:00:00Z"}}`, `{"d":{"$date":"2024-01-01T12:00:00Z"}}`, `{"d":{"$date":"2024-01-02T00:00:00Z"}}`})
}

func TestDensifyErrors(t *testing.T) {
	for _, c := range []struct {
		stage string
		input []bson.D
		want  mongoerr.Code
	}{
		{`{"$densify":{"field":"x","range":{"step":0,"bounds":"full"}}}`, nil, 5733401},
		{`{"$densify":{"field":"x","range":{"step":1.5,"unit":"day","bounds":"full"}}}`, nil, 6586400},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":[1]}}}`, nil, 5733403},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":[3,1]}}}`, nil, 5733402},
		{`{"$densify":{"field":"x","range":{"step":1,"unit":"day","bounds":[1,3]}}}`, nil, 5733409},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":["a","b"]}}}`, nil, 5946800},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":"all"}}}`, nil, 5946802},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":5}}}`, nil, 5733404},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":"partition"}}}`, nil, 5733408},
		{`{"$densify":{"field":"x","range":{"step":1}}}`, nil, mongoerr.Location40414},
		{`{"$densify":{"field":"x","partitionByFields":["x.y"],"range":{"step":1,"bounds":"full"}}}`, nil, 8993000},
		{`{"$densify":{"field":"a.x","partitionByFields":["a"],"range":{"step":1,"bounds":"full"}}}`, nil, 9554500},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":"full"},"other":1}}`, nil, mongoerr.UnknownField},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":"full"}}}`, docs(t, `{"x":"s"}`), 5733201},
		{`{"$densify":{"field":"x","range":{"step":1,"unit":"day","bounds":"full"}}}`, docs(t, `{"x":1}`), 6053600},
		{`{"$densify":{"field":"x","range":{"step":1,"bounds":"full"}}}`, docs(t, `{"x":{"$date":"2024-01-01T00:00:00Z"}}`), 6053600},
	} {
		if _, err := run(t, &Env{}, c.input, parse(t, c.stage)); code(err) != c.want {
			t.Errorf("%s: got %v, want %d", c.stage, err, c.want)
		}
	}
}

func TestDensifyIsBounded(t *testing.T) {
	old := maxDensifyDocs
	maxDensifyDocs = 10
	defer func() { maxDensifyDocs = old }()
	_, err := run(t, &Env{}, docs(t, `{"x":0}`, `{"x":100}`), parse(t, `{"$densify":{"field":"x","range":{"step":1,"bounds":"full"}}}`))
	if code(err) != 5897900 {
		t.Fatalf("generating past the limit: %v", err)
	}
	// Its sort holds what $sort holds: past the limit it fails without
	// disk use, and spills with it.
	oldSort := sortMemoryBytes
	sortMemoryBytes = 200
	defer func() { sortMemoryBytes = oldSort }()
	input := docs(t, `{"x":3}`, `{"x":1}`, `{"x":5}`, `{"x":2}`, `{"x":4}`, `{"x":0}`)
	stage := parse(t, `{"$densify":{"field":"x","range":{"step":1,"bounds":"full"}}}`)
	if _, err := run(t, &Env{}, input, stage); code(err) != mongoerr.QueryExceededMemoryLimit {
		t.Fatalf("without disk use: %v", err)
	}
	got, err := run(t, &Env{AllowDiskUse: true, TempDir: t.TempDir()}, input, stage)
	if err != nil || len(got) != 6 || got[0] != `{"x":0}` || got[5] != `{"x":5}` {
		t.Fatalf("spilling: %v %v", got, err)
	}
}

func TestDocuments(t *testing.T) {
	env := &Env{Vars: map[string]any{"n": int32(3)}}
	ds, err := EvalDocuments(parse(t, `{"a":{"$map":{"input":{"$range":[0,"$$n"]},"in":{"x":"$$this"}}}}`)[0].Value, env)
	if err != nil || len(ds) != 3 {
		t.Fatalf("%v %v", ds, err)
	}
	if _, err := EvalDocuments(bson.A{bson.D{}, int32(2)}, env); code(err) != 40228 {
		t.Fatalf("a non-document element: %v", err)
	}
	if _, err := EvalDocuments("s", env); code(err) != 5858203 {
		t.Fatalf("not an array: %v", err)
	}
	// Not first: 40602.
	if _, err := run(t, env, nil, parse(t, `{"$match":{}}`), parse(t, `{"$documents":[]}`)); code(err) != mongoerr.Location40602 {
		t.Fatalf("$documents second: %v", err)
	}
	// In $unionWith and $lookup, a leading $documents is read instead of a
	// collection (the reader is never called).
	read := func(ctx context.Context, coll string, f *query.Filter, fn func(bson.D) error) error {
		t.Fatalf("read %s", coll)
		return nil
	}
	env = &Env{Read: read}
	checkRun(t, env, docs(t, `{"k":1}`, `{"k":2}`),
		[]string{`{"$unionWith":{"pipeline":[{"$documents":[{"k":9}]},{"$set":{"u":true}}]}}`},
		[]string{`{"k":1}`, `{"k":2}`, `{"k":9,"u":true}`})
	checkRun(t, env, docs(t, `{"k":1}`, `{"k":2}`),
		[]string{`{"$lookup":{"let":{"k":"$k"},"pipeline":[{"$documents":[{"v":1},{"v":2}]},{"$match":{"$expr":{"$eq":["$v","$$k"]}}}],"as":"m"}}`},
		[]string{`{"k":1,"m":[{"v":1}]}`, `{"k":2,"m":[{"v":2}]}`})
	checkRun(t, env, docs(t, `{"k":2}`),
		[]string{`{"$lookup":{"localField":"k","foreignField":"v","pipeline":[{"$documents":[{"v":1},{"v":2}]}],"as":"m"}}`},
		[]string{`{"k":2,"m":[{"v":2}]}`})
	if _, err := run(t, env, nil, parse(t, `{"$unionWith":{"pipeline":[{"$match":{}}]}}`)); code(err) != mongoerr.FailedToParse {
		t.Fatalf("$unionWith with neither coll nor $documents: %v", err)
	}
	if _, err := run(t, env, nil, parse(t, `{"$lookup":{"pipeline":[{"$match":{}}],"as":"m"}}`)); code(err) != mongoerr.FailedToParse {
		t.Fatalf("$lookup with neither from nor $documents: %v", err)
	}
}
