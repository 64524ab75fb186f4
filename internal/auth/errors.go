package auth

import "fmt"

// ErrorKind says what went wrong, so the command layer can choose the
// MongoDB code without parsing messages.
type ErrorKind int

const (
	// KindMalformed: a message or argument that does not parse. Its text
	// may be shown (it never contains secrets).
	KindMalformed ErrorKind = iota + 1
	// KindFailed: authentication failed. One message for every reason, so
	// an attacker cannot tell an unknown user from a wrong password.
	KindFailed
	// KindUnauthorized: the user lacks a privilege.
	KindUnauthorized
	// KindMechanism: the mechanism is not offered.
	KindMechanism
	// KindNoConversation: saslContinue without a conversation in progress
	// (never started, finished, or replayed).
	KindNoConversation
	KindUserNotFound
	KindRoleNotFound
	KindUserExists
	KindRoleExists
	// KindBadValue: a well-formed but invalid argument (unknown action,
	// role cycle, privileges outside the role's database).
	KindBadValue
)

// Error is an auth failure. Msg is safe to show a client.
type Error struct {
	Kind ErrorKind
	Msg  string
	// Reason is for the server log only (why authentication failed).
	Reason string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return e.Msg + " (" + e.Reason + ")"
	}
	return e.Msg
}

func malformed(msg string) error { return &Error{Kind: KindMalformed, Msg: msg} }

// FailedMsg is the one message every failed authentication gets.
const FailedMsg = "Authentication failed."

func failed(reason string) error { return &Error{Kind: KindFailed, Msg: FailedMsg, Reason: reason} }

func errorf(kind ErrorKind, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
