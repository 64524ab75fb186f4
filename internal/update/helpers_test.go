package update

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// d builds a bson.D from alternating keys and values. Untyped integer
// constants become int32, as BSON decoding would produce them.
func d(kv ...any) bson.D {
	out := bson.D{}
	for i := 0; i < len(kv); i += 2 {
		out = append(out, bson.E{Key: kv[i].(string), Value: small(kv[i+1])})
	}
	return out
}

func a(v ...any) bson.A {
	out := make(bson.A, len(v))
	for i, e := range v {
		out[i] = small(e)
	}
	return out
}

func small(v any) any {
	if i, ok := v.(int); ok {
		return int32(i)
	}
	return v
}

func dec128(t *testing.T, s string) bson.Decimal128 {
	t.Helper()
	v, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("ParseDecimal128(%q): %v", s, err)
	}
	return v
}

// checkErr fails unless err carries code and, when msg is not empty, a
// message containing msg.
func checkErr(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %d (%s), got nil", code, msg)
	}
	me, ok := mongoerr.As(err)
	if !ok {
		t.Fatalf("want *mongoerr.Error, got %T: %v", err, err)
	}
	if me.Code != code {
		t.Fatalf("want code %d, got %d: %s", code, me.Code, me.Msg)
	}
	if msg != "" && !strings.Contains(me.Msg, msg) {
		t.Fatalf("message %q does not contain %q", me.Msg, msg)
	}
}

func checkDoc(t *testing.T, got, want bson.D) {
	t.Helper()
	if !identical(got, want) {
		t.Fatalf("got  %s\nwant %s\n(got %#v)", formatValue(got), formatValue(want), got)
	}
}
