package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
)

// OpMsg is a parsed OP_MSG. Body and sequence documents alias the message
// buffer and have been validated.
type OpMsg struct {
	Flags     uint32
	Body      bson.Raw
	Sequences []Sequence
}

// Sequence is a kind-1 section: documents the command sees as an array
// field named Identifier.
type Sequence struct {
	Identifier string
	Documents  []bson.Raw
}

// parseOpMsg parses the bytes after the header; hb is the raw header, which
// the checksum covers.
func parseOpMsg(h *Header, hb, data []byte) (*OpMsg, error) {
	if len(data) < 4 {
		return nil, badf(h, mongoerr.ProtocolError, "OP_MSG of %d bytes has no room for flags", headerLen+len(data))
	}
	m := &OpMsg{Flags: binary.LittleEndian.Uint32(data)}
	if bad := m.Flags & requiredFlagMask &^ knownRequired; bad != 0 {
		return nil, fatalf(h, codeIllegalOpMsgFlag, "OP_MSG has unknown required flag bits 0x%04x", bad)
	}
	end := len(data)
	if m.Flags&FlagChecksumPresent != 0 {
		if end < 8 {
			return nil, fatalf(h, codeChecksumMismatch, "OP_MSG checksum flag set but no room for a checksum")
		}
		end -= 4
		want := binary.LittleEndian.Uint32(data[end:])
		tab := crc32.MakeTable(crc32.Castagnoli)
		got := crc32.Update(crc32.Checksum(hb, tab), tab, data[:end])
		if got != want {
			return nil, fatalf(h, codeChecksumMismatch, "OP_MSG checksum 0x%08x does not match contents (0x%08x)", want, got)
		}
	}

	bodies := 0
	for off := 4; off < end; {
		kind := SectionKind(data[off])
		off++
		switch kind {
		case SectionBody:
			doc, err := checkDocument(data[off:end])
			if err != nil {
				return nil, docError(h, "OP_MSG body", err)
			}
			if bodies == 0 {
				m.Body = doc
			}
			bodies++
			off += len(doc)
		case SectionSequence:
			seq, n, err := parseSequence(h, data[off:end])
			if err != nil {
				return nil, err
			}
			if len(m.Sequences) == maxSequences {
				return nil, fatalf(h, codeTooManyDocumentSequences, "OP_MSG has more than %d document sequences", maxSequences)
			}
			for _, s := range m.Sequences {
				if s.Identifier == seq.Identifier {
					return nil, badf(h, codeDuplicateSequence, "OP_MSG has two document sequences named %q", seq.Identifier)
				}
			}
			m.Sequences = append(m.Sequences, seq)
			off += n
		default:
			return nil, badf(h, codeUnknownSectionKind, "OP_MSG has unknown section kind %d", kind)
		}
	}
	switch {
	case bodies == 0:
		return nil, badf(h, codeNoBody, "OP_MSG has no body section")
	case bodies > 1:
		return nil, badf(h, codeMultipleBodies, "OP_MSG has %d body sections", bodies)
	}
	return m, nil
}

// parseSequence parses a kind-1 section starting at its size field and
// returns it with the number of bytes it occupies.
func parseSequence(h *Header, b []byte) (Sequence, int, error) {
	if len(b) < 4 {
		return Sequence{}, 0, badf(h, mongoerr.ProtocolError, "OP_MSG document sequence size truncated")
	}
	size := int(int32(binary.LittleEndian.Uint32(b)))
	if size < 5 || size > len(b) {
		return Sequence{}, 0, badf(h, mongoerr.ProtocolError, "OP_MSG document sequence size %d invalid with %d bytes left", size, len(b))
	}
	sec := b[4:size]
	i := bytes.IndexByte(sec, 0)
	switch {
	case i < 0:
		return Sequence{}, 0, badf(h, mongoerr.ProtocolError, "OP_MSG document sequence identifier not terminated within its section")
	case i == 0:
		return Sequence{}, 0, badf(h, mongoerr.ProtocolError, "OP_MSG document sequence has an empty identifier")
	}
	seq := Sequence{Identifier: string(sec[:i])}
	for off := i + 1; off < len(sec); {
		doc, err := checkDocument(sec[off:])
		if err != nil {
			where := fmt.Sprintf("OP_MSG sequence %q document %d", seq.Identifier, len(seq.Documents))
			return Sequence{}, 0, docError(h, where, err)
		}
		seq.Documents = append(seq.Documents, doc)
		off += len(doc)
	}
	return seq, size, nil
}

// Command returns the command document: the body's fields followed by one
// field per document sequence, named by its identifier, whose value is a
// bson.A of bson.D. The result shares no memory with the message buffer.
func (m *OpMsg) Command() (bson.D, error) {
	cmd, err := bsonx.Decode(m.Body)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InvalidBSON, "invalid BSON in OP_MSG body: %s", decodeReason(err))
	}
	for _, s := range m.Sequences {
		for _, e := range cmd {
			if e.Key == s.Identifier {
				return nil, mongoerr.Newf(codeSequenceDuplicatesBody, "OP_MSG document sequence %q duplicates a body field", s.Identifier)
			}
		}
		arr := make(bson.A, len(s.Documents))
		for i, raw := range s.Documents {
			d, err := bsonx.Decode(raw)
			if err != nil {
				return nil, mongoerr.Newf(mongoerr.InvalidBSON, "invalid BSON in OP_MSG sequence %q document %d: %s", s.Identifier, i, decodeReason(err))
			}
			arr[i] = d
		}
		cmd = append(cmd, bson.E{Key: s.Identifier, Value: arr})
	}
	return cmd, nil
}

// decodeReason is the detail of a bsonx error without its code, which the
// caller's error already carries.
func decodeReason(err error) string {
	if me, ok := mongoerr.As(err); ok {
		return me.Msg
	}
	return err.Error()
}
