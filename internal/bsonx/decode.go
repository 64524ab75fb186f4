package bsonx

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// MaxDepth is the deepest nesting of documents and arrays Decode accepts,
// counting the top-level document as depth 0. It equals wire.MaxBSONDepth
// (MongoDB's limit), so anything the wire layer validated decodes.
const MaxDepth = 200

// Decode decodes one BSON document into a bson.D holding exactly the Go
// types bson.Unmarshal(raw, &d) produces for a bson.D d, with field order and
// duplicate keys kept. len(raw) must equal the document's length prefix.
//
// Memory: nothing in the result aliases raw, so callers may reuse raw.
// All keys and string values are substrings of one private copy of raw, made
// once per call, which saves an allocation per string; the price is that any
// retained string keeps that whole copy alive. Binary payloads are copied
// one by one, as the driver does, so a caller may modify them freely.
//
// Like the driver, Decode does not check that strings are valid UTF-8, and
// decodes arrays by position, ignoring their keys. On malformed input it is
// sometimes stricter than the driver; the package documentation says where.
func Decode(raw []byte) (bson.D, error) {
	if len(raw) < 5 {
		return nil, errorf(0, "document of %d bytes is shorter than the minimum 5", len(raw))
	}
	if n := int32(binary.LittleEndian.Uint32(raw)); int(n) != len(raw) {
		return nil, errorf(0, "document length prefix %d does not match its %d bytes", n, len(raw))
	}
	d := decoder{raw: raw, str: string(raw)}
	doc, _, err := d.document(0, len(raw), 0)
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// decoder holds the state of one Decode call.
type decoder struct {
	raw []byte
	// str is a copy of raw; keys and strings are sliced from it.
	str string
}

// bounds checks the length prefix of the document or array at off, which
// must fit before lim, and returns the index of its terminating 0x00.
func (d *decoder) bounds(off, lim int) (int, error) {
	if lim-off < 5 {
		return 0, errorf(off, "document needs at least 5 bytes, %d left", lim-off)
	}
	n := int(int32(binary.LittleEndian.Uint32(d.raw[off:])))
	if n < 5 || n > lim-off {
		return 0, errorf(off, "document length %d invalid with %d bytes left", n, lim-off)
	}
	end := off + n - 1
	if d.raw[end] != 0 {
		return 0, errorf(end, "document does not end with 0x00")
	}
	return end, nil
}

// element reads the type byte and key of the element at p, which lies
// before the terminator at end, and returns them with the value's offset.
func (d *decoder) element(p, end int) (byte, int, int, error) {
	t := d.raw[p]
	p++
	k := nul(d.raw[p:end])
	if k < 0 {
		return 0, 0, 0, errorf(p, "element name not terminated")
	}
	return t, p, p + k, nil
}

// document decodes the document at off, which must fit before lim and is
// nested depth levels deep, and returns it with the offset just past it.
func (d *decoder) document(off, lim, depth int) (bson.D, int, error) {
	end, err := d.bounds(off, lim)
	if err != nil {
		return nil, 0, err
	}
	doc := make(bson.D, 0, d.fields(off+4, end))
	for p := off + 4; p < end; {
		t, keyAt, keyEnd, err := d.element(p, end)
		if err != nil {
			return nil, 0, err
		}
		v, next, err := d.value(t, keyEnd+1, end, depth)
		if err != nil {
			return nil, 0, err
		}
		doc = append(doc, bson.E{Key: d.str[keyAt:keyEnd], Value: v})
		p = next
	}
	return doc, end + 1, nil
}

// array is document for arrays: keys are checked for termination only,
// as the driver ignores them.
func (d *decoder) array(off, lim, depth int) (bson.A, int, error) {
	end, err := d.bounds(off, lim)
	if err != nil {
		return nil, 0, err
	}
	arr := make(bson.A, 0, d.fields(off+4, end))
	for p := off + 4; p < end; {
		t, _, keyEnd, err := d.element(p, end)
		if err != nil {
			return nil, 0, err
		}
		v, next, err := d.value(t, keyEnd+1, end, depth)
		if err != nil {
			return nil, 0, err
		}
		arr = append(arr, v)
		p = next
	}
	return arr, end + 1, nil
}

// errorf reports a malformed document; off is where the problem is, from
// the start of the top-level document.
func errorf(off int, format string, args ...any) error {
	return mongoerr.Newf(mongoerr.InvalidBSON, "%s at offset %d", fmt.Sprintf(format, args...), off)
}

// DecodeValue decodes one value of type t, given exactly its bytes (as a
// bson.RawValue holds them), into the Go value Decode gives it inside a
// document. It copies only what the result must own (the bytes of
// strings and binary data), so numbers, dates and the like cost no
// allocation beyond their interface boxing.
func DecodeValue(t bson.Type, data []byte) (any, error) {
	d := decoder{raw: data}
	switch t {
	case bson.TypeDouble, bson.TypeInt32, bson.TypeInt64, bson.TypeDateTime, bson.TypeTimestamp,
		bson.TypeBoolean, bson.TypeNull, bson.TypeUndefined, bson.TypeMinKey, bson.TypeMaxKey,
		bson.TypeObjectID, bson.TypeDecimal128:
	default:
		d.str = string(data)
	}
	v, next, err := d.value(byte(t), 0, len(data), 1)
	if err == nil && next != len(data) {
		err = errorf(next, "%d bytes after the value", len(data)-next)
	}
	return v, err
}
