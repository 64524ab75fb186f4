package bsonx

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// appendRaw appends an already-encoded document. The driver does not copy
// a bson.Raw blindly: it walks the top-level elements and fails on what it
// cannot step over. appendRaw makes the same checks, so that it fails
// exactly when the driver does; when the walk succeeds the driver's copy
// is the document's bytes unchanged, and so is this one. Bytes past the
// document's length prefix are ignored, as the driver ignores them.
func appendRaw(b []byte, raw bson.Raw) ([]byte, error) {
	n, err := rawLength(raw)
	if err != nil {
		return nil, err
	}
	return append(b, raw[:n]...), nil
}

// rawLength checks the top level of raw as the driver does before copying
// it and returns the length its prefix declares. Nested documents are
// checked for their length prefix only, again like the driver.
func rawLength(raw []byte) (int, error) {
	if len(raw) < 4 {
		return 0, rawError("%d bytes cannot hold a length prefix", len(raw))
	}
	n := int(int32(binary.LittleEndian.Uint32(raw)))
	if n < 5 || n > len(raw) {
		return 0, rawError("length prefix %d invalid with %d bytes", n, len(raw))
	}
	for p := 4; ; {
		if p >= n {
			return 0, rawError("document of %d bytes has no terminator", n)
		}
		t := raw[p]
		p++
		if t == 0 {
			if p != n {
				return 0, rawError("terminator at offset %d of a document of %d bytes", p-1, n)
			}
			return n, nil
		}
		k := bytes.IndexByte(raw[p:n], 0)
		if k < 0 {
			return 0, rawError("key at offset %d not terminated", p)
		}
		p += k + 1
		size, ok := rawValueSize(raw[p:n], t)
		if !ok {
			return 0, rawError("value of type 0x%02x at offset %d invalid or truncated", t, p)
		}
		p += size
	}
}

// rawValueSize is how many bytes the driver steps over for a value of type
// t at the start of src: a length prefix is trusted, only checked to be
// non-negative and to fit in src. It reports false for an unknown type or
// a value that does not fit.
func rawValueSize(src []byte, t byte) (int, bool) {
	var size int64
	switch bson.Type(t) {
	case bson.TypeEmbeddedDocument, bson.TypeArray, bson.TypeCodeWithScope:
		return prefixedSize(src, 0)
	case bson.TypeString, bson.TypeJavaScript, bson.TypeSymbol:
		return prefixedSize(src, 4)
	case bson.TypeBinary:
		return prefixedSize(src, 4+1)
	case bson.TypeDBPointer:
		return prefixedSize(src, 4+12)
	case bson.TypeUndefined, bson.TypeNull, bson.TypeMinKey, bson.TypeMaxKey:
		size = 0
	case bson.TypeBoolean:
		size = 1
	case bson.TypeInt32:
		size = 4
	case bson.TypeDouble, bson.TypeDateTime, bson.TypeTimestamp, bson.TypeInt64:
		size = 8
	case bson.TypeObjectID:
		size = 12
	case bson.TypeDecimal128:
		size = 16
	case bson.TypeRegex:
		pattern := bytes.IndexByte(src, 0)
		if pattern < 0 {
			return 0, false
		}
		options := bytes.IndexByte(src[pattern+1:], 0)
		if options < 0 {
			return 0, false
		}
		size = int64(pattern + 1 + options + 1)
	default:
		return 0, false
	}
	if size > int64(len(src)) {
		return 0, false
	}
	return int(size), true
}

// prefixedSize is the size of a value that starts with an int32 length,
// plus extra bytes the length does not count.
func prefixedSize(src []byte, extra int64) (int, bool) {
	if len(src) < 4 {
		return 0, false
	}
	n := int64(int32(binary.LittleEndian.Uint32(src)))
	if n < 0 || n+extra > int64(len(src)) {
		return 0, false
	}
	return int(n + extra), true
}

func rawError(format string, args ...any) error {
	return mongoerr.Newf(mongoerr.InvalidBSON, "cannot copy bson.Raw: "+format, args...)
}
