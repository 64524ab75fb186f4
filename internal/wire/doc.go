// Package wire is the server side of the MongoDB wire protocol framing: it
// reads one whole client message from a byte stream (OP_MSG, or the legacy
// OP_QUERY some drivers still use for the first handshake), validates it, and
// writes OP_MSG and OP_REPLY replies.
//
// Everything a client sends is untrusted. ReadMessage must never panic, never
// read past the frame it was told about, and never allocate more than the
// declared length allows; every problem comes back as a *FrameError, whose
// Fatal flag tells the caller whether the connection can carry on.
//
// Documents are validated here (lengths, terminators, element bounds, nesting
// depth, size limits) so that later layers can decode them without rechecking
// their structure. Parsed documents alias the message buffer; nothing is
// reused across calls, so a Message stays valid as long as the caller keeps it.
//
// This package must never log, never look inside a command beyond its field
// names (command semantics belong to the command layer), and never hold
// per-connection or global state: it does not know about sockets, deadlines,
// compression negotiation or authentication.
package wire
