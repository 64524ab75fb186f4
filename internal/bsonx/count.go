package bsonx

import (
	"bytes"
	"encoding/binary"
)

// fields counts the elements between p and the terminator at end, so that
// a document or array can be allocated at its final size before decoding.
// It only skips over values; on anything malformed it stops early and
// leaves the error to the decoding that follows.
func (d *decoder) fields(p, end int) int {
	n := 0
	for p < end {
		k := nul(d.raw[p+1 : end])
		if k < 0 {
			break
		}
		at := p + k + 2
		size := d.size(d.raw[p], at, end)
		if size < 0 || size > end-at {
			break
		}
		p = at + size
		n++
	}
	return n
}

// size returns the length of the value of type t at p, which must lie
// before lim, or -1 if it cannot tell.
func (d *decoder) size(t byte, p, lim int) int {
	prefix := func() int {
		if lim-p < 4 {
			return -1
		}
		return int(int32(binary.LittleEndian.Uint32(d.raw[p:])))
	}
	switch t {
	case 0x06, 0x0A, 0x7F, 0xFF: // undefined, null, maxKey, minKey
		return 0
	case 0x08: // bool
		return 1
	case 0x10: // int32
		return 4
	case 0x01, 0x09, 0x11, 0x12: // double, datetime, timestamp, int64
		return 8
	case 0x07: // ObjectId
		return 12
	case 0x13: // decimal128
		return 16
	case 0x03, 0x04, 0x0F: // document, array, code with scope
		return prefix()
	case 0x02, 0x0D, 0x0E: // string, JavaScript, symbol
		if n := prefix(); n >= 0 {
			return 4 + n
		}
	case 0x05: // binary
		if n := prefix(); n >= 0 {
			return 5 + n
		}
	case 0x0C: // DBPointer
		if n := prefix(); n >= 0 {
			return 4 + n + 12
		}
	case 0x0B: // regex: two cstrings
		i := bytes.IndexByte(d.raw[p:lim], 0)
		if i < 0 {
			return -1
		}
		j := bytes.IndexByte(d.raw[p+i+1:lim], 0)
		if j < 0 {
			return -1
		}
		return i + j + 2
	}
	return -1
}

// nul returns the index of the first 0x00 in b, or -1. Keys are usually a
// few bytes long, where a plain loop beats the call into bytes.IndexByte.
func nul(b []byte) int {
	for i := 0; i < len(b) && i < 16; i++ {
		if b[i] == 0 {
			return i
		}
	}
	if len(b) <= 16 {
		return -1
	}
	if k := bytes.IndexByte(b[16:], 0); k >= 0 {
		return 16 + k
	}
	return -1
}
