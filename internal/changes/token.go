package changes

import (
	"fmt"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Position orders changes: the commit LSN of their transaction, then their
// index in it. Index hwm is a high-water mark: every change of the
// transactions committed at or before LSN.
type Position struct {
	LSN   uint64
	Index uint32
}

const hwm = math.MaxUint32

// tokenPrefix versions the resume token format.
const tokenPrefix = "T1"

// needs is the slot position that still holds every change after p: the
// slot passes a transaction only once it is beyond its commit LSN, so a
// position inside one needs the slot at that LSN, and one past all of it
// (Index hwm) only just beyond.
func (p Position) needs() uint64 {
	if p.Index == hwm {
		return p.LSN + 1
	}
	return p.LSN
}

// Less orders positions.
func (p Position) Less(q Position) bool {
	if p.LSN != q.LSN {
		return p.LSN < q.LSN
	}
	return p.Index < q.Index
}

// Token is the resume token of the position: {_data: hex string}, opaque to
// drivers and ordered as strings, as MongoDB's are.
func (p Position) Token() bson.D {
	return bson.D{{Key: "_data", Value: fmt.Sprintf("%s%016X%08X", tokenPrefix, p.LSN, p.Index)}}
}

// invalidateSuffix marks the token of an invalidate event: it sorts right
// after its cause's token, and startAfter accepts it where resumeAfter
// does not.
const invalidateSuffix = "I"

// invalidateToken is the token of the invalidate event caused by the change
// at p.
func invalidateToken(p Position) bson.D {
	t := p.Token()
	t[0].Value = t[0].Value.(string) + invalidateSuffix
	return t
}

// ParseToken reads a resume token (resumeAfter, startAfter); invalidate
// says it is an invalidate event's.
func ParseToken(v any) (p Position, invalidate bool, err error) {
	t, err := parseTokenString(v)
	return t.pos, t.invalidate, err
}

type parsedToken struct {
	pos        Position
	invalidate bool
}

func parseTokenString(v any) (parsedToken, error) {
	d, ok := v.(bson.D)
	if !ok || len(d) == 0 {
		return parsedToken{}, mongoerr.New(mongoerr.TypeMismatch, "a resume token must be an object with a '_data' field")
	}
	var s string
	for _, e := range d {
		if e.Key != "_data" {
			return parsedToken{}, mongoerr.Newf(mongoerr.BadValue, "invalid resume token: unknown field '%s'", e.Key)
		}
		if s, ok = e.Value.(string); !ok {
			return parsedToken{}, mongoerr.New(mongoerr.BadValue, "invalid resume token: '_data' must be a string")
		}
	}
	bad := mongoerr.New(mongoerr.BadValue, "invalid resume token: not a token of this tierdb")
	n := len(tokenPrefix) + 24
	var t parsedToken
	switch {
	case len(s) == n:
	case len(s) == n+len(invalidateSuffix) && s[n:] == invalidateSuffix:
		t.invalidate = true
	default:
		return t, bad
	}
	if s[:len(tokenPrefix)] != tokenPrefix {
		return t, bad
	}
	lsn, err1 := strconv.ParseUint(s[2:18], 16, 64)
	idx, err2 := strconv.ParseUint(s[18:26], 16, 32)
	if err1 != nil || err2 != nil {
		return parsedToken{}, bad
	}
	t.pos = Position{LSN: lsn, Index: uint32(idx)}
	return t, nil
}
