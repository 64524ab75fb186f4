package auth

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// The SCRAM messages a server receives (RFC 5802 §7). Parsing is strict:
// MongoDB's drivers send exactly these forms, and anything else is more
// likely an attack than a client we should humour.

// maxMessage bounds a SCRAM message; the longest legitimate one (a client
// final with a SHA-256 proof and a long nonce) is a few hundred bytes.
const maxMessage = 4096

// ClientFirst is "gs2-header client-first-bare".
type ClientFirst struct {
	// GS2Header is "n,," or "y,," (no channel binding is offered).
	GS2Header string
	User      string // unescaped
	Nonce     string
	// Bare is client-first-bare as sent, part of the AuthMessage.
	Bare string
}

// ClientFinal is "c=…,r=…,p=…".
type ClientFinal struct {
	ChannelBinding []byte // decoded c=
	Nonce          string
	Proof          []byte // decoded p=
	// WithoutProof is client-final-message-without-proof as sent.
	WithoutProof string
}

// ParseClientFirst parses the client's first message.
func ParseClientFirst(msg []byte) (ClientFirst, error) {
	var cf ClientFirst
	if len(msg) == 0 {
		return cf, malformed("empty SCRAM client-first message")
	}
	if len(msg) > maxMessage {
		return cf, malformed("SCRAM message too long")
	}
	s := string(msg)
	if !validUTF8NoNUL(s) {
		return cf, malformed("SCRAM message is not valid UTF-8")
	}
	// gs2-cbind-flag
	var rest string
	switch {
	case strings.HasPrefix(s, "n,"), strings.HasPrefix(s, "y,"):
		rest = s[2:]
	case strings.HasPrefix(s, "p="):
		return cf, malformed("channel binding is not supported")
	default:
		return cf, malformed("SCRAM client-first message must start with \"n,\"")
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, malformed("SCRAM client-first message has no gs2 header end")
	}
	if authzid != "" {
		// MongoDB authorizes as the authenticating user only.
		return cf, malformed("authorization identity (a=) is not supported")
	}
	cf.GS2Header = s[:len(s)-len(bare)]
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) != 2 {
		if len(attrs) > 0 && strings.HasPrefix(attrs[0], "m=") {
			return cf, malformed("SCRAM mandatory extensions are not supported")
		}
		return cf, malformed("SCRAM client-first message must be n=<user>,r=<nonce>")
	}
	if !strings.HasPrefix(attrs[0], "n=") {
		return cf, malformed("SCRAM client-first message must start its bare part with n=")
	}
	user, err := unescapeName(attrs[0][2:])
	if err != nil {
		return cf, err
	}
	if user == "" {
		return cf, malformed("SCRAM user name is empty")
	}
	if !strings.HasPrefix(attrs[1], "r=") {
		return cf, malformed("SCRAM client-first message needs r=<nonce> after the user")
	}
	nonce := attrs[1][2:]
	if err := checkNonce(nonce); err != nil {
		return cf, err
	}
	cf.User, cf.Nonce = user, nonce
	return cf, nil
}

// ParseClientFinal parses the client's final message.
func ParseClientFinal(msg []byte) (ClientFinal, error) {
	var cf ClientFinal
	if len(msg) == 0 {
		return cf, malformed("empty SCRAM client-final message")
	}
	if len(msg) > maxMessage {
		return cf, malformed("SCRAM message too long")
	}
	s := string(msg)
	if !validUTF8NoNUL(s) {
		return cf, malformed("SCRAM message is not valid UTF-8")
	}
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return cf, malformed("SCRAM client-final message has no proof (p=)")
	}
	cf.WithoutProof = s[:i]
	proof, err := base64.StdEncoding.Strict().DecodeString(s[i+3:])
	if err != nil || len(proof) == 0 {
		return cf, malformed("SCRAM proof is not valid base64")
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) != 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return cf, malformed("SCRAM client-final message must be c=<binding>,r=<nonce>,p=<proof>")
	}
	cb, err := base64.StdEncoding.Strict().DecodeString(attrs[0][2:])
	if err != nil {
		return cf, malformed("SCRAM channel binding is not valid base64")
	}
	cf.ChannelBinding = cb
	cf.Nonce = attrs[1][2:]
	if err := checkNonce(cf.Nonce); err != nil {
		return cf, err
	}
	return cf, nil
}

// unescapeName decodes a saslname: "=2C" is ',' and "=3D" is '='; any other
// '=' is an error (RFC 5802 §5.1).
func unescapeName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", malformed("SCRAM user name has an invalid '=' escape")
		}
		i += 2
	}
	return b.String(), nil
}

// EscapeName is unescapeName's inverse, for clients (tests, bench).
func EscapeName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// checkNonce: printable ASCII except ',' (RFC 5802 §7), not empty.
func checkNonce(n string) error {
	if n == "" {
		return malformed("SCRAM nonce is empty")
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return malformed("SCRAM nonce has a non-printable character")
		}
	}
	return nil
}

func validUTF8NoNUL(s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		return false
	}
	return utf8.ValidString(s)
}
