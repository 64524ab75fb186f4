package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Message is one parsed client message. Exactly one of Msg and Query is set.
type Message struct {
	Header Header
	Msg    *OpMsg
	Query  *OpQuery
}

// eagerBody is the largest body read straight into an exactly sized buffer.
// Beyond it the buffer grows with what arrives (doubling, within a Budget),
// so a header alone, or a body sent in part, cannot pin MaxMessageSize bytes.
const eagerBody = 1 << 20

// ReadMessage reads one whole message from r. maxSize bounds the declared
// length (pass MaxMessageSize; <= 0 means the same).
//
// It returns io.EOF, unwrapped, when the stream ends cleanly between
// messages; every other error is a *FrameError. An opcode other than OP_MSG
// and OP_QUERY is consumed and reported as a non-fatal *FrameError carrying
// the header.
func ReadMessage(r *bufio.Reader, maxSize int) (*Message, error) {
	return ReadMessageWithin(r, maxSize, nil)
}

// ReadMessageWithin is ReadMessage with the buffers of large messages taken
// from b while they arrive (nil: no bound).
func ReadMessageWithin(r *bufio.Reader, maxSize int, b *Budget) (*Message, error) {
	if maxSize <= 0 {
		maxSize = MaxMessageSize
	}
	var hb [headerLen]byte
	if n, err := io.ReadFull(r, hb[:]); err != nil {
		switch {
		case err == io.EOF:
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fatalf(nil, mongoerr.ProtocolError, "truncated message header: got %d of %d bytes", n, headerLen)
		}
		return nil, &FrameError{Fatal: true, Code: mongoerr.ProtocolError, Msg: "reading message header", Err: err}
	}
	h := Header{
		Length:     int32(binary.LittleEndian.Uint32(hb[0:])),
		RequestID:  int32(binary.LittleEndian.Uint32(hb[4:])),
		ResponseTo: int32(binary.LittleEndian.Uint32(hb[8:])),
		OpCode:     OpCode(binary.LittleEndian.Uint32(hb[12:])),
	}
	if h.Length < headerLen {
		return nil, fatalf(&h, mongoerr.ProtocolError, "message length %d is less than the %d-byte header", h.Length, headerLen)
	}
	if int64(h.Length) > int64(maxSize) {
		return nil, fatalf(&h, mongoerr.ProtocolError, "message length %d exceeds maximum %d", h.Length, maxSize)
	}
	bodyLen := int(h.Length) - headerLen

	if h.OpCode != OpCodeMsg && h.OpCode != OpCodeQuery {
		// Skip without buffering: the caller only needs the header.
		if n, err := r.Discard(bodyLen); err != nil {
			return nil, readFailure(&h, n, bodyLen, err)
		}
		return nil, badf(&h, mongoerr.ProtocolError, "unsupported opcode %s", h.OpCode)
	}

	body, err := readBody(r, bodyLen, b)
	if err == errBudget {
		return nil, budgetExceeded(&h, b.limit)
	}
	if err != nil {
		return nil, readFailure(&h, len(body), bodyLen, err)
	}
	m := &Message{Header: h}
	if h.OpCode == OpCodeMsg {
		m.Msg, err = parseOpMsg(&m.Header, hb[:], body)
	} else {
		m.Query, err = parseOpQuery(&m.Header, body)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

var errBudget = errors.New("wire: message budget exceeded")

// readBody reads exactly n bytes. On error it returns what it got. Past
// eagerBody the buffer doubles as data arrives, each growth taken from b
// (so b holds what the buffer has beyond eagerBody) and all of it given
// back before returning.
func readBody(r *bufio.Reader, n int, b *Budget) ([]byte, error) {
	if n <= eagerBody {
		buf := make([]byte, n)
		got, err := io.ReadFull(r, buf)
		return buf[:got], err
	}
	buf := make([]byte, eagerBody)
	var held int64
	defer func() { b.give(held) }()
	got := 0
	for {
		k, err := io.ReadFull(r, buf[got:])
		got += k
		if err != nil || got == n {
			return buf[:got], err
		}
		size := min(2*len(buf), n)
		if !b.take(int64(size - len(buf))) {
			return buf[:got], errBudget
		}
		held += int64(size - len(buf))
		grown := make([]byte, size)
		copy(grown, buf[:got])
		buf = grown
	}
}

func readFailure(h *Header, got, want int, err error) *FrameError {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fatalf(h, mongoerr.ProtocolError, "truncated message: got %d of %d body bytes", got, want)
	}
	return &FrameError{Header: h, Fatal: true, Code: mongoerr.ProtocolError, Msg: "reading message body", Err: err}
}

// checkDocument takes the document at the start of b, fully validated.
func checkDocument(b []byte) (bson.Raw, error) {
	d, err := splitDocument(b)
	if err == nil {
		err = validateDocument(d)
	}
	if err != nil {
		return nil, err
	}
	return bson.Raw(d), nil
}

// docError reports a checkDocument failure; where names the document
// ("OP_MSG body", ...).
func docError(h *Header, where string, err error) *FrameError {
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return badf(h, mongoerr.BSONObjectTooLarge, "%s: %v", where, err)
	}
	return badf(h, mongoerr.InvalidBSON, "invalid BSON in %s: %v", where, err)
}
