package baseline

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// opKind is one of the measured operations.
type opKind int

const (
	opFind opKind = iota
	opInsert
	opUpdate
	opUpdateHot // every client updates record 0: a hot document's row lock
)

func allOps() []opKind { return []opKind{opFind, opInsert, opUpdate, opUpdateHot} }

func (k opKind) String() string {
	switch k {
	case opFind:
		return "find-by-_id"
	case opInsert:
		return "insert"
	case opUpdate:
		return "update-by-_id"
	case opUpdateHot:
		return "update-hot"
	}
	return fmt.Sprintf("op%d", int(k))
}

// A record is YCSB-shaped: an integer key and fieldCount string fields of
// fieldLen bytes each.
const (
	fieldCount = 10
	fieldLen   = 100
)

type fields [fieldCount]string

// fieldNames are "field0" … "field9"; built once so the hot loop does not
// format them.
func fieldNames() [fieldCount]string {
	var names [fieldCount]string
	for i := range names {
		names[i] = fmt.Sprintf("field%d", i)
	}
	return names
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// randomString returns n printable ASCII bytes, so the JSON and BSON
// encodings are the same size and need no escaping.
func randomString(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := 0; i < n; {
		// One 64-bit draw yields ten 6-bit letters.
		r := rng.Uint64()
		for j := 0; j < 10 && i < n; j++ {
			b[i] = letters[r&63]
			r >>= 6
			i++
		}
	}
	return string(b)
}

func randomFields(rng *rand.Rand) fields {
	var f fields
	for i := range f {
		f[i] = randomString(rng, fieldLen)
	}
	return f
}

// target is one way of running the workload: tierdb through a MongoDB
// driver, or the equivalent SQL straight to PostgreSQL. Methods are called
// from many goroutines at once. An operation that does not find or change
// the record it should is an error.
type target interface {
	name() string
	// preload replaces the target's data with records 0 … n-1.
	preload(ctx context.Context, n int, rng *rand.Rand) error
	find(ctx context.Context, id int64) error
	insert(ctx context.Context, id int64, f *fields) error
	update(ctx context.Context, id int64, field0 string) error
	close(ctx context.Context)
}
