package bsonx

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// maxDocumentSize is the driver's limit: a length must fit its int32 prefix.
const maxDocumentSize = math.MaxInt32

// marshalScratch is the size of the stack buffer Marshal encodes into
// before copying the result out. Most replies and stored documents fit;
// a larger one would cost every call more time to zero it.
const marshalScratch = 2048

// AppendDocument appends the BSON encoding of d to dst, byte-for-byte what
// bson.Marshal(d) produces, and returns the extended buffer. On error it
// returns dst with its length unchanged (bytes past that length may have
// been overwritten).
//
// Values of the types Decode produces, plus bson.Raw, []bson.E, []any, int,
// []byte, time.Time and bson.Null, are encoded directly; any other value is
// handed to the driver, so the result always matches bson.Marshal. Errors
// are *mongoerr.Error: BadValue for a NUL byte in a key or a regular
// expression (which the driver rejects too), BSONObjectTooLarge past the
// int32 length limit, InvalidBSON for a bson.Raw the driver would refuse to
// copy, and InternalError for anything else the driver cannot encode, such
// as a nil d, which the driver turns into a null that cannot stand at the
// top level.
func AppendDocument(dst []byte, d bson.D) ([]byte, error) {
	if d == nil {
		return dst, mongoerr.New(mongoerr.InternalError, "cannot encode a nil bson.D as a document")
	}
	b, err := encoder{max: maxDocumentSize}.elements(dst, d, nil)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// Marshal is AppendDocument(nil, d), with a result of exactly the needed
// capacity (rounded up to the allocator's size class). It costs one
// allocation for documents up to 2 KiB and a few more for larger ones; hot
// paths that can reuse a buffer should call AppendDocument instead.
func Marshal(d bson.D) ([]byte, error) {
	var scratch [marshalScratch]byte
	b, err := AppendDocument(scratch[:0], d)
	if err != nil {
		return nil, err
	}
	// Copying unconditionally keeps scratch on the stack: returning b itself
	// would make the compiler move scratch to the heap.
	return bytes.Clone(b), nil
}

// encoder holds the settings of one encoding; max is a field rather than
// the constant so that tests can reach the size limit cheaply.
type encoder struct {
	max int
}

// elements appends a document holding d's elements or, when a is not nil,
// an array holding a's. Documents, arrays and code-with-scope values with a
// bson.D scope are encoded here and everything else by value, so that
// elements is the only recursive function: with mutual recursion the
// compiler no longer sees that b only flows to the result, and moves
// Marshal's scratch to the heap.
func (e encoder) elements(b []byte, d bson.D, a []any) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	n := len(d)
	if a != nil {
		n = len(a)
	}
	for i := range n {
		// The type byte is a placeholder until the value is known.
		at := len(b)
		b = append(b, 0)
		var v any
		if a != nil {
			b = strconv.AppendInt(b, int64(i), 10)
			v = a[i]
		} else {
			if strings.IndexByte(d[i].Key, 0) >= 0 {
				return nil, mongoerr.Newf(mongoerr.BadValue, "BSON element key %q contains a null byte", d[i].Key)
			}
			b = append(b, d[i].Key...)
			v = d[i].Value
		}
		b = append(b, 0)
		var t byte
		var err error
		// The driver encodes a nil slice of any kind as null.
		switch v := v.(type) {
		case bson.D:
			t = byte(bson.TypeNull)
			if v != nil {
				t = byte(bson.TypeEmbeddedDocument)
				b, err = e.elements(b, v, nil)
			}
		case bson.A:
			t = byte(bson.TypeNull)
			if v != nil {
				t = byte(bson.TypeArray)
				b, err = e.elements(b, nil, v)
			}
		case []bson.E:
			t = byte(bson.TypeNull)
			if v != nil {
				t = byte(bson.TypeEmbeddedDocument)
				b, err = e.elements(b, v, nil)
			}
		case []any:
			t = byte(bson.TypeNull)
			if v != nil {
				t = byte(bson.TypeArray)
				b, err = e.elements(b, nil, v)
			}
		case bson.CodeWithScope:
			scope, ok := v.Scope.(bson.D)
			if !ok || scope == nil {
				b, t, err = value(b, v)
				break
			}
			// A total length, the code, the scope. No separate size
			// check: the enclosing document's covers this length.
			t = byte(bson.TypeCodeWithScope)
			cws := len(b)
			b = appendString(append(b, 0, 0, 0, 0), string(v.Code))
			if b, err = e.elements(b, scope, nil); err == nil {
				binary.LittleEndian.PutUint32(b[cws:], uint32(len(b)-cws))
			}
		default:
			b, t, err = value(b, v)
		}
		if err != nil {
			return nil, err
		}
		b[at] = t
	}
	return e.end(b, start)
}

// end terminates the document or array whose length prefix is at start
// and fills the prefix in.
func (e encoder) end(b []byte, start int) ([]byte, error) {
	b = append(b, 0)
	n := len(b) - start
	if n > e.max {
		return nil, mongoerr.Newf(mongoerr.BSONObjectTooLarge, "document size (%d) is larger than the max int32", n)
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}
