package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// bsonError is a structural problem in a document, with the byte offset
// (from the start of the top-level document) where it was found.
type bsonError struct {
	off int
	msg string
}

func (e *bsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// tooLargeError is returned by splitDocument for a document over
// MaxWireDocumentSize, so the caller can use MongoDB's BSONObjectTooLarge.
type tooLargeError struct{ size int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("document of %d bytes exceeds maximum %d", e.size, MaxWireDocumentSize)
}

// splitDocument returns the document at the start of b and its length, after
// checking its length prefix against b and the size limit. It does not look
// inside the document; validateDocument does.
func splitDocument(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, &bsonError{0, fmt.Sprintf("document length prefix truncated (%d bytes left)", len(b))}
	}
	n := int(int32(binary.LittleEndian.Uint32(b)))
	switch {
	case n < 5:
		return nil, &bsonError{0, fmt.Sprintf("document length %d is less than 5", n)}
	case n > MaxWireDocumentSize:
		return nil, &tooLargeError{n}
	case n > len(b):
		return nil, &bsonError{0, fmt.Sprintf("document length %d overruns the %d bytes left", n, len(b))}
	}
	return b[:n], nil
}

// validateDocument checks the structure of doc, whose length prefix is
// already known to equal len(doc): every element's type is known, every
// name and value lies inside the document, lengths and terminators agree,
// and nesting stays within MaxBSONDepth. It is at least as strict as the
// driver's decoder, so a document that passes can always be unmarshalled.
func validateDocument(doc []byte) error {
	return checkDoc(doc, 0, 0)
}

// checkDoc validates doc, which starts at offset base of the top-level
// document and is nested depth levels deep.
func checkDoc(doc []byte, base, depth int) error {
	if depth > MaxBSONDepth {
		return &bsonError{base, fmt.Sprintf("nesting deeper than %d levels", MaxBSONDepth)}
	}
	end := len(doc) - 1
	if doc[end] != 0 {
		return &bsonError{base + end, "document does not end with 0x00"}
	}
	off := 4
	for off < end {
		typ, typOff := doc[off], base+off
		off++
		k := bytes.IndexByte(doc[off:end], 0)
		if k < 0 {
			return &bsonError{base + off, "element name not terminated"}
		}
		off += k + 1
		n, err := checkValue(typ, doc[off:end], base+off, typOff, depth)
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// checkValue validates one value of type typ at the start of v (which ends
// where the enclosing document's terminator is) and returns its length. base
// and typOff are the offsets of the value and of its type byte.
func checkValue(typ byte, v []byte, base, typOff, depth int) (int, error) {
	fixed := func(n int) (int, error) {
		if len(v) < n {
			return 0, &bsonError{base, fmt.Sprintf("value of type 0x%02x needs %d bytes, %d left", typ, n, len(v))}
		}
		return n, nil
	}
	switch typ {
	case 0x06, 0x0A, 0x7F, 0xFF: // undefined, null, maxKey, minKey
		return 0, nil
	case 0x08: // bool
		if _, err := fixed(1); err != nil {
			return 0, err
		}
		if v[0] > 1 {
			return 0, &bsonError{base, fmt.Sprintf("boolean byte is 0x%02x", v[0])}
		}
		return 1, nil
	case 0x10: // int32
		return fixed(4)
	case 0x01, 0x09, 0x11, 0x12: // double, datetime, timestamp, int64
		return fixed(8)
	case 0x07: // ObjectId
		return fixed(12)
	case 0x13: // decimal128
		return fixed(16)
	case 0x02, 0x0D, 0x0E: // string, JavaScript, symbol
		return checkString(v, base)
	case 0x03, 0x04: // document, array
		d, err := splitDocument(v)
		if err != nil {
			return 0, rebase(err, base)
		}
		return len(d), checkDoc(d, base, depth+1)
	case 0x05: // binary
		if _, err := fixed(5); err != nil {
			return 0, err
		}
		n := int(int32(binary.LittleEndian.Uint32(v)))
		if n < 0 || n > len(v)-5 {
			return 0, &bsonError{base, fmt.Sprintf("binary length %d overruns the %d bytes left", n, len(v)-5)}
		}
		// Subtype 2 (old binary) repeats the length inside the payload; the
		// driver trusts that inner length, so it must agree.
		if v[4] == 0x02 && n > 4 {
			if inner := int(int32(binary.LittleEndian.Uint32(v[5:]))); inner != n-4 {
				return 0, &bsonError{base, fmt.Sprintf("old binary inner length %d, want %d", inner, n-4)}
			}
		}
		return 5 + n, nil
	case 0x0B: // regex: pattern and options cstrings
		p := bytes.IndexByte(v, 0)
		if p < 0 {
			return 0, &bsonError{base, "regex pattern not terminated"}
		}
		o := bytes.IndexByte(v[p+1:], 0)
		if o < 0 {
			return 0, &bsonError{base + p + 1, "regex options not terminated"}
		}
		return p + 1 + o + 1, nil
	case 0x0C: // DBPointer: string then ObjectId
		n, err := checkString(v, base)
		if err != nil {
			return 0, err
		}
		if len(v)-n < 12 {
			return 0, &bsonError{base + n, "DBPointer ObjectId truncated"}
		}
		return n + 12, nil
	case 0x0F: // code with scope: total length, string, document
		return checkCodeWithScope(v, base, depth)
	}
	return 0, &bsonError{typOff, fmt.Sprintf("unknown element type 0x%02x", typ)}
}

// checkString validates a length-prefixed, NUL-terminated string.
func checkString(v []byte, base int) (int, error) {
	if len(v) < 4 {
		return 0, &bsonError{base, "string length truncated"}
	}
	n := int(int32(binary.LittleEndian.Uint32(v)))
	if n < 1 || n > len(v)-4 {
		return 0, &bsonError{base, fmt.Sprintf("string length %d invalid with %d bytes left", n, len(v)-4)}
	}
	if v[4+n-1] != 0 {
		return 0, &bsonError{base + 4 + n - 1, "string not terminated"}
	}
	return 4 + n, nil
}

func checkCodeWithScope(v []byte, base, depth int) (int, error) {
	if len(v) < 4 {
		return 0, &bsonError{base, "code with scope length truncated"}
	}
	total := int(int32(binary.LittleEndian.Uint32(v)))
	if total < 4+5+5 || total > len(v) {
		return 0, &bsonError{base, fmt.Sprintf("code with scope length %d invalid with %d bytes left", total, len(v))}
	}
	inner := v[4:total]
	s, err := checkString(inner, base+4)
	if err != nil {
		return 0, err
	}
	d, err := splitDocument(inner[s:])
	if err != nil {
		return 0, rebase(err, base+4+s)
	}
	if s+len(d) != len(inner) {
		return 0, &bsonError{base, fmt.Sprintf("code with scope length %d does not match its parts (%d)", total, 4+s+len(d))}
	}
	return total, checkDoc(d, base+4+s, depth+1)
}

// rebase moves a bsonError found in a sub-slice to top-level offsets.
func rebase(err error, base int) error {
	var be *bsonError
	if errors.As(err, &be) {
		return &bsonError{be.off + base, be.msg}
	}
	return err
}
