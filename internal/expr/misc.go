package expr

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $rand, the size operators and the timestamp parts: null or missing in
// gives null out (but $rand, which takes nothing).

func miscOps() map[string]parser {
	return map[string]parser{
		"$rand":        parseRand,
		"$bsonSize":    naryNamed(1, 1, bsonSize),
		"$binarySize":  naryNamed(1, 1, binarySize),
		"$tsSecond":    naryNamed(1, 1, tsPart(mongoerr.Location5687301, func(t bson.Timestamp) uint32 { return t.T })),
		"$tsIncrement": naryNamed(1, 1, tsPart(mongoerr.Location5687302, func(t bson.Timestamp) uint32 { return t.I })),
	}
}

// parseRand: {$rand: {}} (or [], which MongoDB also takes), a double in
// [0, 1) for each evaluation.
func parseRand(_ string, arg any, _ *Scope) (Expr, error) {
	var n int
	switch x := arg.(type) {
	case bson.D:
		n = len(x)
	case bson.A:
		n = len(x)
	default:
		return nil, mongoerr.New(mongoerr.Location10065, "invalid parameter: expected an object ($rand)")
	}
	if n != 0 {
		return nil, mongoerr.New(mongoerr.Location3040501, "$rand does not currently accept arguments")
	}
	return &lazyExpr{fn: func(*Ctx, []Expr) (any, error) { return rand.Float64(), nil }}, nil
}

// bsonSize is a document's size in bytes as BSON, an int.
func bsonSize(name string, a []any) (any, error) {
	if nullish(a[0]) {
		return nil, nil
	}
	d, ok := a[0].(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location31393, "%s requires a document input, found: %s", name, TypeName(a[0]))
	}
	b, err := bson.Marshal(d)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "%s: %v", name, err)
	}
	return int32(len(b)), nil
}

// binarySize is a string's length in UTF-8 bytes or a BinData's in
// bytes, an int.
func binarySize(name string, a []any) (any, error) {
	switch x := a[0].(type) {
	case string:
		return int32(len(x)), nil
	case bson.Binary:
		return int32(len(x.Data)), nil
	}
	if nullish(a[0]) {
		return nil, nil
	}
	return nil, mongoerr.Newf(mongoerr.Location51276, "%s requires a string or BinData argument, found: %s", name, TypeName(a[0]))
}

// tsPart is $tsSecond or $tsIncrement: a timestamp's part, a long.
func tsPart(code mongoerr.Code, part func(bson.Timestamp) uint32) func(string, []any) (any, error) {
	return func(name string, a []any) (any, error) {
		if nullish(a[0]) {
			return nil, nil
		}
		t, ok := a[0].(bson.Timestamp)
		if !ok {
			return nil, mongoerr.Newf(code, " Argument to %s must be a timestamp, but is %s", name, TypeName(a[0]))
		}
		return int64(part(t)), nil
	}
}
