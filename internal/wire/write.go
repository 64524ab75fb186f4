package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"
)

// WriteMsg writes an OP_MSG with a single body section in one Write call.
// body must be one BSON document. If flags has FlagChecksumPresent the
// CRC-32C checksum is appended.
func WriteMsg(w io.Writer, requestID, responseTo int32, flags uint32, body []byte) error {
	buf, err := AppendMsg(nil, requestID, responseTo, flags, body)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// AppendMsg appends the OP_MSG WriteMsg would write to dst, so a caller can
// reuse its own buffer.
func AppendMsg(dst []byte, requestID, responseTo int32, flags uint32, body []byte) ([]byte, error) {
	return appendOpMsg(dst, requestID, responseTo, flags, body, nil)
}

// WriteReply writes an OP_REPLY (cursor id 0, starting at 0) carrying docs,
// the answer to a legacy OP_QUERY handshake, in one Write call.
func WriteReply(w io.Writer, requestID, responseTo int32, responseFlags int32, docs ...[]byte) error {
	buf, err := AppendReply(nil, requestID, responseTo, responseFlags, docs...)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// AppendReply appends the OP_REPLY WriteReply would write to dst.
func AppendReply(dst []byte, requestID, responseTo int32, responseFlags int32, docs ...[]byte) ([]byte, error) {
	size := headerLen + 4 + 8 + 4 + 4
	for i, d := range docs {
		if err := checkOutgoing(d); err != nil {
			return dst, fmt.Errorf("OP_REPLY document %d: %w", i, err)
		}
		size += len(d)
	}
	if size > MaxMessageSize {
		return dst, fmt.Errorf("OP_REPLY of %d bytes exceeds maximum message size %d", size, MaxMessageSize)
	}
	dst = slices.Grow(dst, size)
	dst = appendHeader(dst, size, requestID, responseTo, OpCodeReply)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(responseFlags))
	dst = binary.LittleEndian.AppendUint64(dst, 0) // cursorID
	dst = binary.LittleEndian.AppendUint32(dst, 0) // startingFrom
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(docs)))
	for _, d := range docs {
		dst = append(dst, d...)
	}
	return dst, nil
}

// Append re-encodes m, with its header's request id and response-to and a
// recomputed length, and appends it to dst. An OP_MSG is written body first,
// then its sequences, which is the order drivers use; a checksum is
// recomputed when the flags ask for one.
func (m *Message) Append(dst []byte) ([]byte, error) {
	switch {
	case m.Msg != nil && m.Query == nil:
		return appendOpMsg(dst, m.Header.RequestID, m.Header.ResponseTo, m.Msg.Flags, m.Msg.Body, m.Msg.Sequences)
	case m.Query != nil && m.Msg == nil:
		return appendOpQuery(dst, m.Header.RequestID, m.Header.ResponseTo, m.Query)
	}
	return dst, errors.New("message must have exactly one of Msg and Query")
}

func appendOpMsg(dst []byte, requestID, responseTo int32, flags uint32, body []byte, seqs []Sequence) ([]byte, error) {
	if err := checkOutgoing(body); err != nil {
		return dst, fmt.Errorf("OP_MSG body: %w", err)
	}
	size := headerLen + 4 + 1 + len(body)
	for _, s := range seqs {
		n, err := sequenceSize(s)
		if err != nil {
			return dst, err
		}
		size += 1 + n
	}
	if flags&FlagChecksumPresent != 0 {
		size += 4
	}
	if size > MaxMessageSize {
		return dst, fmt.Errorf("OP_MSG of %d bytes exceeds maximum message size %d", size, MaxMessageSize)
	}
	start := len(dst)
	dst = slices.Grow(dst, size)
	dst = appendHeader(dst, size, requestID, responseTo, OpCodeMsg)
	dst = binary.LittleEndian.AppendUint32(dst, flags)
	dst = append(dst, byte(SectionBody))
	dst = append(dst, body...)
	for _, s := range seqs {
		n, _ := sequenceSize(s)
		dst = append(dst, byte(SectionSequence))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = append(dst, s.Identifier...)
		dst = append(dst, 0)
		for _, d := range s.Documents {
			dst = append(dst, d...)
		}
	}
	if flags&FlagChecksumPresent != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crc32.MakeTable(crc32.Castagnoli)))
	}
	return dst, nil
}

// sequenceSize is the value of a kind-1 section's size field.
func sequenceSize(s Sequence) (int, error) {
	if s.Identifier == "" || strings.IndexByte(s.Identifier, 0) >= 0 {
		return 0, fmt.Errorf("OP_MSG sequence identifier %q is empty or contains NUL", s.Identifier)
	}
	n := 4 + len(s.Identifier) + 1
	for i, d := range s.Documents {
		if err := checkOutgoing(d); err != nil {
			return 0, fmt.Errorf("OP_MSG sequence %q document %d: %w", s.Identifier, i, err)
		}
		n += len(d)
	}
	return n, nil
}

func appendOpQuery(dst []byte, requestID, responseTo int32, q *OpQuery) ([]byte, error) {
	if strings.IndexByte(q.FullCollectionName, 0) >= 0 {
		return dst, errors.New("OP_QUERY collection name contains NUL")
	}
	if err := checkOutgoing(q.Query); err != nil {
		return dst, fmt.Errorf("OP_QUERY query: %w", err)
	}
	size := headerLen + 4 + len(q.FullCollectionName) + 1 + 8 + len(q.Query)
	if q.ReturnFieldsSelector != nil {
		if err := checkOutgoing(q.ReturnFieldsSelector); err != nil {
			return dst, fmt.Errorf("OP_QUERY returnFieldsSelector: %w", err)
		}
		size += len(q.ReturnFieldsSelector)
	}
	if size > MaxMessageSize {
		return dst, fmt.Errorf("OP_QUERY of %d bytes exceeds maximum message size %d", size, MaxMessageSize)
	}
	dst = slices.Grow(dst, size)
	dst = appendHeader(dst, size, requestID, responseTo, OpCodeQuery)
	dst = binary.LittleEndian.AppendUint32(dst, q.Flags)
	dst = append(dst, q.FullCollectionName...)
	dst = append(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(q.NumberToSkip))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(q.NumberToReturn))
	dst = append(dst, q.Query...)
	dst = append(dst, q.ReturnFieldsSelector...)
	return dst, nil
}

func appendHeader(dst []byte, size int, requestID, responseTo int32, op OpCode) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(size))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(requestID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(responseTo))
	return binary.LittleEndian.AppendUint32(dst, uint32(op))
}

// checkOutgoing is a cheap sanity check on documents tierdb itself built:
// the framing must be right or the client loses sync. Full validation is
// left to the client.
func checkOutgoing(d []byte) error {
	if len(d) < 5 {
		return fmt.Errorf("document of %d bytes is too short", len(d))
	}
	if n := int(int32(binary.LittleEndian.Uint32(d))); n != len(d) {
		return fmt.Errorf("document length prefix %d does not match its %d bytes", n, len(d))
	}
	if d[len(d)-1] != 0 {
		return errors.New("document does not end with 0x00")
	}
	return nil
}
