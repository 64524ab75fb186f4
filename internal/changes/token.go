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

// ParseToken reads a resume token (resumeAfter, startAfter).
func ParseToken(v any) (Position, error) {
	d, ok := v.(bson.D)
	if !ok || len(d) == 0 {
		return Position{}, mongoerr.New(mongoerr.TypeMismatch, "a resume token must be an object with a '_data' field")
	}
	var s string
	for _, e := range d {
		if e.Key != "_data" {
			return Position{}, mongoerr.Newf(mongoerr.BadValue, "invalid resume token: unknown field '%s'", e.Key)
		}
		if s, ok = e.Value.(string); !ok {
			return Position{}, mongoerr.New(mongoerr.BadValue, "invalid resume token: '_data' must be a string")
		}
	}
	if len(s) != len(tokenPrefix)+24 || s[:len(tokenPrefix)] != tokenPrefix {
		return Position{}, mongoerr.New(mongoerr.BadValue, "invalid resume token: not a token of this tierdb")
	}
	lsn, err1 := strconv.ParseUint(s[2:18], 16, 64)
	idx, err2 := strconv.ParseUint(s[18:], 16, 32)
	if err1 != nil || err2 != nil {
		return Position{}, mongoerr.New(mongoerr.BadValue, "invalid resume token: not a token of this tierdb")
	}
	return Position{LSN: lsn, Index: uint32(idx)}, nil
}
