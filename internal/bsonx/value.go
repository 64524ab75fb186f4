package bsonx

import (
	"bytes"
	"encoding/binary"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// value decodes the value of type t at p, which must lie before lim (the
// enclosing document's terminator), in a document nested depth levels deep.
// It returns the value and the offset just past it.
func (d *decoder) value(t byte, p, lim, depth int) (any, int, error) {
	raw := d.raw
	switch bson.Type(t) {
	case bson.TypeDouble:
		if err := d.need(t, p, lim, 8); err != nil {
			return nil, 0, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[p:])), p + 8, nil
	case bson.TypeString:
		s, next, err := d.string(p, lim)
		return s, next, err
	case bson.TypeEmbeddedDocument:
		if depth >= MaxDepth {
			return nil, 0, errorf(p, "nesting deeper than %d levels", MaxDepth)
		}
		doc, next, err := d.document(p, lim, depth+1)
		if err != nil {
			return nil, 0, err
		}
		return doc, next, nil
	case bson.TypeArray:
		if depth >= MaxDepth {
			return nil, 0, errorf(p, "nesting deeper than %d levels", MaxDepth)
		}
		arr, next, err := d.array(p, lim, depth+1)
		if err != nil {
			return nil, 0, err
		}
		return arr, next, nil
	case bson.TypeBinary:
		return d.binary(p, lim)
	case bson.TypeUndefined:
		return bson.Undefined{}, p, nil
	case bson.TypeObjectID:
		if err := d.need(t, p, lim, 12); err != nil {
			return nil, 0, err
		}
		return bson.ObjectID(raw[p : p+12]), p + 12, nil
	case bson.TypeBoolean:
		if err := d.need(t, p, lim, 1); err != nil {
			return nil, 0, err
		}
		if raw[p] > 1 {
			return nil, 0, errorf(p, "boolean byte is 0x%02x", raw[p])
		}
		return raw[p] == 1, p + 1, nil
	case bson.TypeDateTime:
		if err := d.need(t, p, lim, 8); err != nil {
			return nil, 0, err
		}
		return bson.DateTime(binary.LittleEndian.Uint64(raw[p:])), p + 8, nil
	case bson.TypeNull:
		return nil, p, nil
	case bson.TypeRegex:
		pat, optAt, err := d.cstring(p, lim)
		if err != nil {
			return nil, 0, err
		}
		opt, next, err := d.cstring(optAt, lim)
		if err != nil {
			return nil, 0, err
		}
		return bson.Regex{Pattern: pat, Options: opt}, next, nil
	case bson.TypeDBPointer:
		ns, oidAt, err := d.string(p, lim)
		if err != nil {
			return nil, 0, err
		}
		if err := d.need(t, oidAt, lim, 12); err != nil {
			return nil, 0, err
		}
		return bson.DBPointer{DB: ns, Pointer: bson.ObjectID(raw[oidAt : oidAt+12])}, oidAt + 12, nil
	case bson.TypeJavaScript:
		s, next, err := d.string(p, lim)
		return bson.JavaScript(s), next, err
	case bson.TypeSymbol:
		s, next, err := d.string(p, lim)
		return bson.Symbol(s), next, err
	case bson.TypeCodeWithScope:
		return d.codeWithScope(p, lim, depth)
	case bson.TypeInt32:
		if err := d.need(t, p, lim, 4); err != nil {
			return nil, 0, err
		}
		return int32(binary.LittleEndian.Uint32(raw[p:])), p + 4, nil
	case bson.TypeTimestamp:
		if err := d.need(t, p, lim, 8); err != nil {
			return nil, 0, err
		}
		// The increment comes first on the wire.
		ts := bson.Timestamp{I: binary.LittleEndian.Uint32(raw[p:]), T: binary.LittleEndian.Uint32(raw[p+4:])}
		return ts, p + 8, nil
	case bson.TypeInt64:
		if err := d.need(t, p, lim, 8); err != nil {
			return nil, 0, err
		}
		return int64(binary.LittleEndian.Uint64(raw[p:])), p + 8, nil
	case bson.TypeDecimal128:
		if err := d.need(t, p, lim, 16); err != nil {
			return nil, 0, err
		}
		lo, hi := binary.LittleEndian.Uint64(raw[p:]), binary.LittleEndian.Uint64(raw[p+8:])
		return bson.NewDecimal128(hi, lo), p + 16, nil
	case bson.TypeMinKey:
		return bson.MinKey{}, p, nil
	case bson.TypeMaxKey:
		return bson.MaxKey{}, p, nil
	}
	return nil, 0, errorf(p, "value of unknown type 0x%02x", t)
}

// need checks that a fixed-size value of n bytes at p fits before lim.
func (d *decoder) need(t byte, p, lim, n int) error {
	if lim-p < n {
		return errorf(p, "value of type 0x%02x needs %d bytes, %d left", t, n, lim-p)
	}
	return nil
}

// string decodes a length-prefixed, NUL-terminated string at p.
func (d *decoder) string(p, lim int) (string, int, error) {
	if lim-p < 4 {
		return "", 0, errorf(p, "string length truncated")
	}
	n := int(int32(binary.LittleEndian.Uint32(d.raw[p:])))
	if n < 1 || n > lim-p-4 {
		return "", 0, errorf(p, "string length %d invalid with %d bytes left", n, lim-p-4)
	}
	end := p + 4 + n - 1
	if d.raw[end] != 0 {
		return "", 0, errorf(end, "string not terminated")
	}
	return d.str[p+4 : end], end + 1, nil
}

// cstring decodes a NUL-terminated string at p.
func (d *decoder) cstring(p, lim int) (string, int, error) {
	k := bytes.IndexByte(d.raw[p:lim], 0)
	if k < 0 {
		return "", 0, errorf(p, "cstring not terminated")
	}
	return d.str[p : p+k], p + k + 1, nil
}

// binary decodes a binary value at p. Subtype 2 ("old binary") repeats
// the length inside the payload: the driver returns the bytes after that
// inner length, trusting it, so Decode insists that it agrees with the
// outer one. With an outer length of 4 or less the driver takes the payload
// as it is (so an empty old binary decodes as its 4 length bytes), and so
// does Decode.
func (d *decoder) binary(p, lim int) (any, int, error) {
	if lim-p < 5 {
		return nil, 0, errorf(p, "binary header truncated")
	}
	n := int(int32(binary.LittleEndian.Uint32(d.raw[p:])))
	if n < 0 || n > lim-p-5 {
		return nil, 0, errorf(p, "binary length %d invalid with %d bytes left", n, lim-p-5)
	}
	sub := d.raw[p+4]
	data := d.raw[p+5 : p+5+n]
	if sub == bson.TypeBinaryBinaryOld && n > 4 {
		if inner := int(int32(binary.LittleEndian.Uint32(data))); inner != n-4 {
			return nil, 0, errorf(p+5, "old binary inner length %d, want %d", inner, n-4)
		}
		data = data[4:]
	}
	return bson.Binary{Subtype: sub, Data: bytes.Clone(data)}, p + 5 + n, nil
}

// codeWithScope decodes a code-with-scope value at p: a total length, the
// code string and the scope document, which must account for all of it.
func (d *decoder) codeWithScope(p, lim, depth int) (any, int, error) {
	if lim-p < 4 {
		return nil, 0, errorf(p, "code with scope length truncated")
	}
	total := int(int32(binary.LittleEndian.Uint32(d.raw[p:])))
	if total < 4+5+5 || total > lim-p {
		return nil, 0, errorf(p, "code with scope length %d invalid with %d bytes left", total, lim-p)
	}
	if depth >= MaxDepth {
		return nil, 0, errorf(p, "nesting deeper than %d levels", MaxDepth)
	}
	end := p + total
	code, scopeAt, err := d.string(p+4, end)
	if err != nil {
		return nil, 0, err
	}
	scope, next, err := d.document(scopeAt, end, depth+1)
	if err != nil {
		return nil, 0, err
	}
	if next != end {
		return nil, 0, errorf(p, "code with scope length %d does not match its parts (%d)", total, next-p)
	}
	return bson.CodeWithScope{Code: bson.JavaScript(code), Scope: scope}, end, nil
}
