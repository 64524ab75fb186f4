package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// marshal encodes d or fails the test.
func marshal(t testing.TB, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatalf("marshal %v: %v", d, err)
	}
	return b
}

// frame builds a message by hand: a header with the right length followed by
// the payload pieces, independent of the package's writers.
func frame(op OpCode, requestID int32, payload ...[]byte) []byte {
	var body []byte
	for _, p := range payload {
		body = append(body, p...)
	}
	b := make([]byte, 16, 16+len(body))
	binary.LittleEndian.PutUint32(b[0:], uint32(16+len(body)))
	binary.LittleEndian.PutUint32(b[4:], uint32(requestID))
	binary.LittleEndian.PutUint32(b[12:], uint32(op))
	return append(b, body...)
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// withChecksum sets the checksum flag on an OP_MSG built by frame and
// appends a CRC-32C computed here, not by the package.
func withChecksum(f []byte) []byte {
	f = append([]byte(nil), f...)
	binary.LittleEndian.PutUint32(f[16:], binary.LittleEndian.Uint32(f[16:])|FlagChecksumPresent)
	binary.LittleEndian.PutUint32(f[0:], uint32(len(f)+4))
	return binary.LittleEndian.AppendUint32(f, crc32.Checksum(f, crc32.MakeTable(crc32.Castagnoli)))
}

// seqSection builds a kind-1 section by hand.
func seqSection(id string, docs ...[]byte) []byte {
	inner := append([]byte(id), 0)
	for _, d := range docs {
		inner = append(inner, d...)
	}
	out := []byte{byte(SectionSequence)}
	out = append(out, u32(uint32(4+len(inner)))...)
	return append(out, inner...)
}

// bodySection is a kind-0 section.
func bodySection(doc []byte) []byte { return append([]byte{byte(SectionBody)}, doc...) }

func reader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
