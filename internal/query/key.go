package query

import (
	"encoding/binary"
	"hash/fnv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// AppendKey appends to dst an order-preserving, prefix-free encoding of v:
// for any a and b, bytes.Compare(AppendKey(nil, a), AppendKey(nil, b)) is
// Compare(a, b), and the keys are equal exactly when Compare says the values
// are (so int32(1), int64(1), 1.0 and decimal 1.0 share a key). Because no
// key is a prefix of another, keys of several values can be concatenated
// into a compound key that orders field by field.
//
// A key is one bracket byte (see Compare) followed by the value:
//   - numbers: see number.go, exact for every int32, int64, double and
//     finite decimal128 (non-canonical decimal encodings count as zero, as
//     the decimal128 specification says);
//   - strings, symbols, JavaScript, regex pattern and options, names of
//     fields: the bytes with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01;
//   - objects: per field its value's bracket byte, its name, its value's
//     key without the bracket byte; then 0x00. Arrays: the elements' keys,
//     then 0x00;
//   - binary: 4-byte length, subtype, bytes. ObjectId: 12 bytes. Bool: one
//     byte. Date: int64, timestamp: two uint32, DBPointer: 4-byte namespace
//     length, namespace, id; all big-endian, signed ones with the sign bit
//     flipped;
//   - MinKey, MaxKey, null, undefined: nothing.
//
// Go values of other types encode as null.
func AppendKey(dst []byte, v any) []byte {
	v = normalize(v)
	b := bracketOf(v)
	return appendBody(append(dst, byte(b)), b, v)
}

func appendBody(dst []byte, b bracket, v any) []byte {
	switch b {
	case brNumber:
		return appendNumber(dst, v)
	case brString:
		return appendString(dst, stringValue(v))
	case brObject:
		return appendDocBody(dst, v.(bson.D))
	case brArray:
		for _, e := range v.(bson.A) {
			dst = AppendKey(dst, e)
		}
		return append(dst, 0)
	case brBinary:
		x := v.(bson.Binary)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(x.Data)))
		dst = append(dst, x.Subtype)
		return append(dst, x.Data...)
	case brObjectID:
		x := v.(bson.ObjectID)
		return append(dst, x[:]...)
	case brBool:
		if v.(bool) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case brDate:
		return binary.BigEndian.AppendUint64(dst, uint64(v.(bson.DateTime))^(1<<63))
	case brTimestamp:
		x := v.(bson.Timestamp)
		dst = binary.BigEndian.AppendUint32(dst, x.T)
		return binary.BigEndian.AppendUint32(dst, x.I)
	case brRegex:
		x := v.(bson.Regex)
		return appendString(appendString(dst, x.Pattern), x.Options)
	case brDBPointer:
		x := v.(bson.DBPointer)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(x.DB)))
		dst = append(dst, x.DB...)
		return append(dst, x.Pointer[:]...)
	case brJS:
		return appendString(dst, string(v.(bson.JavaScript)))
	case brJSScope:
		x := v.(bson.CodeWithScope)
		return appendDocBody(appendString(dst, string(x.Code)), scopeDoc(x.Scope))
	}
	return dst
}

func appendDocBody(dst []byte, d bson.D) []byte {
	for _, e := range d {
		v := normalize(e.Value)
		b := bracketOf(v)
		dst = append(dst, byte(b))
		dst = appendString(dst, e.Key)
		dst = appendBody(dst, b, v)
	}
	return append(dst, 0)
}

// appendString escapes NUL so that the terminator sorts below every
// continuation: a string sorts before its extensions.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, 0, 1)
}

// IndexKey computes the content of a secondary index key column for doc:
// the concatenated keys of the values at fields, a missing value (or a path
// running through a non-document) encoding as null, like MongoDB indexes.
// ok is false when a path meets an array anywhere, at the end or on the way:
// the document is multikey for this index and the column must be SQL NULL,
// which Filter.SQL reads as "unknown, recheck".
func IndexKey(doc bson.D, fields []string) (key []byte, ok bool) {
	return IndexKeyHashed(doc, fields, -1)
}

// IndexKeyHashed is IndexKey where the field at index hashed (if any, -1
// for none) contributes HashedKey of its value rather than its key.
func IndexKeyHashed(doc bson.D, fields []string, hashed int) (key []byte, ok bool) {
	for i, f := range fields {
		v, isArray := indexValue(doc, f)
		if isArray {
			return nil, false
		}
		if i == hashed {
			key = append(key, HashedKey(v)...)
			continue
		}
		key = AppendKey(key, v)
	}
	return key, true
}

// HashedKey is the 8-byte hash a hashed index keeps for v: equal values (by
// Compare, so 1, 1.0 and NumberLong(1) too) have equal hashes.
func HashedKey(v any) []byte {
	h := fnv.New64a()
	h.Write(AppendKey(nil, v))
	return h.Sum(nil)
}

// indexValue follows path through documents only; it reports whether it met
// an array.
func indexValue(doc bson.D, path string) (v any, isArray bool) {
	cur := doc
	parts := splitPath(path)
	for i, p := range parts {
		val, found := field(cur, p)
		if !found {
			return nil, false
		}
		val = normalize(val)
		if _, ok := val.(bson.A); ok {
			return nil, true
		}
		if i == len(parts)-1 {
			return val, false
		}
		d, ok := val.(bson.D)
		if !ok {
			return nil, false
		}
		cur = d
	}
	return nil, false
}

// prefixEnd is the smallest byte string above every string that starts with
// p, or nil when there is none (p is all 0xFF).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
