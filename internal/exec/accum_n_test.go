package exec

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

var accInput = []string{
	`{"_id":1,"g":"a","v":5,"t":3,"arr":[1,2]}`,
	`{"_id":2,"g":"a","v":null,"t":1,"arr":[2]}`,
	`{"_id":3,"g":"b","v":7,"t":2,"arr":[]}`,
	`{"_id":4,"g":"a","v":1,"t":3,"arr":[3,1]}`,
	`{"_id":5,"g":"a","t":2}`,
	`{"_id":6,"g":"b","v":"x","t":9,"arr":[7]}`,
}

func runJSON(t *testing.T, input []string, stages ...string) (string, error) {
	t.Helper()
	var pipeline []bson.D
	for _, s := range stages {
		pipeline = append(pipeline, parse(t, s))
	}
	got, err := run(t, &Env{}, docs(t, input...), pipeline...)
	return strings.Join(got, "\n"), err
}

func TestGroupNAccumulators(t *testing.T) {
	cases := []struct {
		name, group, want string
	}{
		{"firstN keeps nulls, missing as null",
			`{"_id":"$g","f":{"$firstN":{"n":3,"input":"$v"}},"l":{"$lastN":{"n":2,"input":"$v"}}}`,
			`{"_id":"a","f":[5,null,1],"l":[1,null]}` + "\n" + `{"_id":"b","f":[7,"x"],"l":[7,"x"]}`},
		{"minN and maxN skip nulls",
			`{"_id":"$g","mn":{"$minN":{"n":2,"input":"$v"}},"mx":{"$maxN":{"n":5,"input":"$v"}}}`,
			`{"_id":"a","mn":[1,5],"mx":[5,1]}` + "\n" + `{"_id":"b","mn":[7,"x"],"mx":["x",7]}`},
		{"n from the group key",
			`{"_id":"$g","f":{"$firstN":{"n":{"$cond":[{"$eq":["$_id","a"]},1,2]},"input":"$_id"}}}`,
			`{"_id":"a","f":[1]}` + "\n" + `{"_id":"b","f":[3,6]}`},
		{"top and bottom, ties keep the first",
			`{"_id":"$g","top":{"$top":{"sortBy":{"t":-1},"output":"$_id"}},"bot":{"$bottom":{"sortBy":{"t":-1},"output":["$_id","$v"]}}}`,
			`{"_id":"a","top":1,"bot":[2,null]}` + "\n" + `{"_id":"b","top":6,"bot":[3,7]}`},
		{"topN and bottomN",
			`{"_id":"$g","top":{"$topN":{"n":3,"sortBy":{"t":1,"_id":-1},"output":"$_id"}},"bot":{"$bottomN":{"n":2,"sortBy":{"t":1},"output":"$_id"}}}`,
			`{"_id":"a","top":[2,5,4],"bot":[1,4]}` + "\n" + `{"_id":"b","top":[3,6],"bot":[3,6]}`},
		{"median and percentile ignore non-numbers",
			`{"_id":"$g","m":{"$median":{"input":"$v","method":"approximate"}},"p":{"$percentile":{"input":"$t","p":[0,0.5,1],"method":"approximate"}}}`,
			`{"_id":"a","m":1.0,"p":[1.0,2.0,3.0]}` + "\n" + `{"_id":"b","m":7.0,"p":[2.0,2.0,9.0]}`},
		{"concatArrays and setUnion skip missing",
			`{"_id":"$g","c":{"$concatArrays":"$arr"},"u":{"$setUnion":"$arr"}}`,
			`{"_id":"a","c":[1,2,2,3,1],"u":[1,2,3]}` + "\n" + `{"_id":"b","c":[7],"u":[7]}`},
	}
	for _, c := range cases {
		got, err := runJSON(t, accInput, `{"$group":`+c.group+`}`, `{"$sort":{"_id":1}}`)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, got, c.want)
		}
	}
}

// Many documents through a small n: the trims keep what MongoDB keeps.
func TestNAccumulatorsTrim(t *testing.T) {
	var input []string
	for i := range 50 {
		input = append(input, `{"_id":`+itoa(i)+`,"v":`+itoa(i%7)+`}`)
	}
	got, err := runJSON(t, input, `{"$group":{"_id":null,"mx":{"$maxN":{"n":3,"input":"$v"}},"l":{"$lastN":{"n":2,"input":"$_id"}},"b":{"$bottomN":{"n":2,"sortBy":{"v":1},"output":"$_id"}},"t":{"$topN":{"n":2,"sortBy":{"v":1},"output":"$_id"}}}}`)
	want := `{"_id":null,"mx":[6,6,6],"l":[48,49],"b":[6,13],"t":[0,7]}`
	if err != nil || got != want {
		t.Fatalf("got %s %v, want %s", got, err, want)
	}
}

func itoa(i int) string {
	b, _ := bson.MarshalExtJSON(bson.D{{Key: "v", Value: int32(i)}}, false, false)
	return strings.TrimSuffix(strings.TrimPrefix(string(b), `{"v":`), "}")
}

func TestNAccumulatorErrors(t *testing.T) {
	cases := []struct {
		acc  string
		code mongoerr.Code
	}{
		{`{"$firstN":5}`, mongoerr.Location5787801},
		{`{"$minN":5}`, mongoerr.Location5787900},
		{`{"$firstN":{"n":1,"input":"$v","x":1}}`, mongoerr.Location5787901},
		{`{"$firstN":{"input":"$v"}}`, mongoerr.Location5787906},
		{`{"$lastN":{"n":1}}`, mongoerr.Location5787907},
		{`{"$maxN":{"n":"$v","input":"$v"}}`, mongoerr.Location5787902},
		{`{"$maxN":{"n":0.5,"input":"$v"}}`, mongoerr.Location5787903},
		{`{"$maxN":{"n":-1,"input":"$v"}}`, mongoerr.Location5787908},
		{`{"$top":1}`, mongoerr.Location5788001},
		{`{"$top":{"n":1,"sortBy":{"t":1},"output":"$v"}}`, mongoerr.Location5788002},
		{`{"$topN":{"sortBy":{"t":1},"output":"$v"}}`, mongoerr.Location5788003},
		{`{"$bottom":{"sortBy":{"t":1}}}`, mongoerr.Location5788004},
		{`{"$bottomN":{"n":1,"output":"$v"}}`, mongoerr.Location5788005},
		{`{"$top":{"sortBy":{"t":2},"output":"$v"}}`, mongoerr.Location15975},
		{`{"$median":1}`, mongoerr.Location7436100},
		{`{"$percentile":1}`, mongoerr.Location7429703},
		{`{"$percentile":{"input":"$v","method":"approximate"}}`, mongoerr.Location40414},
		{`{"$percentile":{"input":"$v","p":[2],"method":"approximate"}}`, mongoerr.Location7750303},
		{`{"$median":{"input":"$v","method":"continuous"}}`, mongoerr.BadValue},
		{`{"$concatArrays":"$v"}`, mongoerr.TypeMismatch},
		{`{"$setUnion":"$v"}`, mongoerr.TypeMismatch},
		{`{"$accumulator":{}}`, mongoerr.NotImplemented},
	}
	for _, c := range cases {
		_, err := runJSON(t, accInput, `{"$group":{"_id":null,"x":`+c.acc+`}}`)
		e, ok := mongoerr.As(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: got %v, want code %d", c.acc, err, c.code)
		}
	}
}

func TestWindowNAccumulators(t *testing.T) {
	got, err := runJSON(t, accInput, `{"$match":{"g":"a"}}`,
		`{"$setWindowFields":{"sortBy":{"_id":1},"output":{`+
			`"last2":{"$lastN":{"n":2,"input":"$_id"},"window":{"documents":["unbounded","current"]}},`+
			`"top":{"$top":{"sortBy":{"t":1},"output":"$_id"},"window":{"documents":[-1,1]}},`+
			`"med":{"$median":{"input":"$v","method":"approximate"}},`+
			`"cat":{"$concatArrays":"$arr","window":{"documents":[0,1]}}}}}`,
		`{"$project":{"last2":1,"top":1,"med":1,"cat":1}}`)
	want := strings.Join([]string{
		`{"_id":1,"last2":[1],"top":2,"med":1.0,"cat":[1,2,2]}`,
		`{"_id":2,"last2":[1,2],"top":2,"med":1.0,"cat":[2,3,1]}`,
		`{"_id":4,"last2":[2,4],"top":2,"med":1.0,"cat":[3,1]}`,
		`{"_id":5,"last2":[4,5],"top":5,"med":1.0,"cat":[]}`,
	}, "\n")
	if err != nil || got != want {
		t.Fatalf("got\n%s\n%v\nwant\n%s", got, err, want)
	}
}

// What $topN reports to $group must cover what it holds at every step,
// whatever the sizes of the documents it keeps and drops.
func TestTopAccReportsWhatItHolds(t *testing.T) {
	spec, err := parseTopAcc("$topN", parse(t, `{"n":2,"sortBy":{"k":1},"output":"$s"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	acc := spec.build(2).(*topAcc)
	big := strings.Repeat("x", 1<<20)
	reported := 0
	add := func(k int32, s string) {
		n, err := acc.add(bson.D{{Key: "output", Value: s}, {Key: "sortFields0", Value: k}})
		if err != nil {
			t.Fatal(err)
		}
		reported += n
		held := 0
		for _, it := range acc.items {
			held += DocMemory(bson.D{{Key: "output", Value: it.out}}) + DocMemory(it.key)
		}
		if reported < held {
			t.Fatalf("after k=%d: reported %d bytes, holds at least %d", k, reported, held)
		}
	}
	// Three small documents, then a big one that triggers a trim: the
	// trim must not count the small ones it drops as big.
	for k := range int32(3) {
		add(k, "s")
	}
	add(3, big)
	// Big documents that sort first are all kept for a while.
	for k := int32(-1); k > -4; k-- {
		add(k, big)
	}
}

// A growing window reads value() after each add: what it gave must not
// share an array the accumulator goes on appending to.
func TestArrayAccValuesAreTheirOwn(t *testing.T) {
	for _, op := range []string{"$concatArrays", "$setUnion"} {
		acc := accumulators[op]()
		for i := range int32(3) {
			acc.add(bson.A{i})
		}
		first := acc.value().(bson.A)
		acc.add(bson.A{int32(3)})
		second := acc.value().(bson.A)
		_ = append(first, "overwritten")
		if second[3] != int32(3) {
			t.Errorf("%s: an earlier value shares its array: %v", op, second)
		}
	}
}
