package wire

import "strconv"

// Limits advertised to clients in the hello reply and enforced on input.
const (
	// MaxMessageSize is the maxMessageSizeBytes tierdb advertises.
	MaxMessageSize = 48_000_000
	// MaxBSONObjectSize is the maxBsonObjectSize tierdb advertises.
	MaxBSONObjectSize = 16 * 1024 * 1024
	// MaxWireDocumentSize is the largest single document accepted in a
	// message. MongoDB allows 16 KiB over MaxBSONObjectSize so that a command
	// carrying a maximum-size document still fits; the command layer enforces
	// MaxBSONObjectSize on the documents it stores.
	MaxWireDocumentSize = MaxBSONObjectSize + 16*1024
	// MaxBSONDepth is the deepest nesting of documents and arrays accepted,
	// counting the top-level document as depth 0 (MongoDB's default limit).
	MaxBSONDepth = 200
)

// headerLen is the size of the standard message header.
const headerLen = 16

// OpCode identifies the kind of a wire message.
type OpCode int32

// Opcodes, prefixed so that OpMsg and OpQuery can name the parsed message
// types. Only OpCodeMsg and OpCodeQuery are accepted from clients;
// OpCodeReply is what tierdb sends back to an OP_QUERY. The others are named
// so errors can say what a client sent.
const (
	OpCodeReply       OpCode = 1
	OpCodeUpdate      OpCode = 2001
	OpCodeInsert      OpCode = 2002
	OpCodeQuery       OpCode = 2004
	OpCodeGetMore     OpCode = 2005
	OpCodeDelete      OpCode = 2006
	OpCodeKillCursors OpCode = 2007
	OpCodeCompressed  OpCode = 2012
	OpCodeMsg         OpCode = 2013
)

func (c OpCode) String() string {
	switch c {
	case OpCodeReply:
		return "OP_REPLY"
	case OpCodeUpdate:
		return "OP_UPDATE"
	case OpCodeInsert:
		return "OP_INSERT"
	case OpCodeQuery:
		return "OP_QUERY"
	case OpCodeGetMore:
		return "OP_GET_MORE"
	case OpCodeDelete:
		return "OP_DELETE"
	case OpCodeKillCursors:
		return "OP_KILL_CURSORS"
	case OpCodeCompressed:
		return "OP_COMPRESSED"
	case OpCodeMsg:
		return "OP_MSG"
	}
	return "opcode " + strconv.Itoa(int(c))
}

// Header is the standard header that starts every message.
type Header struct {
	Length     int32 // total message length, header included
	RequestID  int32
	ResponseTo int32
	OpCode     OpCode
}

// OP_MSG flag bits. Bits 0-15 are "required": a receiver that does not know
// one must reject the message. Bits 16-31 are optional and may be ignored.
const (
	FlagChecksumPresent uint32 = 1 << 0
	FlagMoreToCome      uint32 = 1 << 1
	FlagExhaustAllowed  uint32 = 1 << 16

	requiredFlagMask = 0xffff
	knownRequired    = FlagChecksumPresent | FlagMoreToCome
)

// SectionKind is the first byte of an OP_MSG section.
type SectionKind byte

const (
	// SectionBody is kind 0: a single BSON document, the command body.
	SectionBody SectionKind = 0
	// SectionSequence is kind 1: a size, an identifier and zero or more
	// documents that the command sees as an array field named by the
	// identifier.
	SectionSequence SectionKind = 1
)

// maxSequences bounds document sequences per OP_MSG. MongoDB rejects more
// than two, and the bound keeps the duplicate checks trivially cheap.
const maxSequences = 2
