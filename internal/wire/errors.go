package wire

import (
	"fmt"

	"tierdb/internal/mongoerr"
)

// MongoDB codes for message parse failures that internal/mongoerr does not
// name. The four-digit-plus ones are MongoDB's numbered assertions; it sends
// them as "Location<N>", which is what mongoerr.Code.Name produces.
const (
	codeIllegalOpMsgFlag         mongoerr.Code = 223
	codeTooManyDocumentSequences mongoerr.Code = 233
	codeChecksumMismatch         mongoerr.Code = 288
	codeMultipleBodies           mongoerr.Code = 40430
	codeDuplicateSequence        mongoerr.Code = 40431
	codeUnknownSectionKind       mongoerr.Code = 40432
	codeSequenceDuplicatesBody   mongoerr.Code = 40433
	codeNoBody                   mongoerr.Code = 40587
)

// FrameError is every error ReadMessage returns apart from a clean io.EOF.
type FrameError struct {
	// Header is the message header when it was read, else nil. With it the
	// caller can answer a non-fatal error (ResponseTo = Header.RequestID).
	Header *Header
	// Fatal means the caller must close the connection without answering:
	// either the stream is no longer positioned at a message boundary (bad
	// length, truncated frame, I/O error) or, as MongoDB does for illegal
	// flags, too many sequences and checksum mismatches, the message cannot
	// be trusted enough to reply to. When false the whole frame was consumed
	// and the next ReadMessage starts at the next message.
	Fatal bool
	// Code is the MongoDB error code to report if the caller answers.
	Code mongoerr.Code
	// Msg says what is wrong; it is safe to show the client.
	Msg string
	// Err is the underlying I/O error, if any. Not for clients.
	Err error
}

func (e *FrameError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap exposes the I/O cause so errors.Is(err, os.ErrDeadlineExceeded)
// and the like work on read failures.
func (e *FrameError) Unwrap() error { return e.Err }

// Mongo returns the error as a client-visible MongoDB error.
func (e *FrameError) Mongo() *mongoerr.Error {
	return &mongoerr.Error{Code: e.Code, Msg: e.Msg, Cause: e.Err}
}

func fatalf(h *Header, code mongoerr.Code, format string, args ...any) *FrameError {
	return &FrameError{Header: h, Fatal: true, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func badf(h *Header, code mongoerr.Code, format string, args ...any) *FrameError {
	return &FrameError{Header: h, Code: code, Msg: fmt.Sprintf(format, args...)}
}
