package auth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"strconv"

	"github.com/xdg-go/stringprep"
)

// Mechanism is a SASL mechanism tierdb offers.
type Mechanism uint8

const (
	SCRAMSHA1 Mechanism = iota + 1
	SCRAMSHA256
)

// Mechanisms lists what tierdb offers, strongest first.
var Mechanisms = []Mechanism{SCRAMSHA256, SCRAMSHA1}

func (m Mechanism) String() string {
	switch m {
	case SCRAMSHA1:
		return "SCRAM-SHA-1"
	case SCRAMSHA256:
		return "SCRAM-SHA-256"
	}
	return "unknown"
}

// ParseMechanism reads a mechanism name as drivers send it.
func ParseMechanism(s string) (Mechanism, bool) {
	switch s {
	case "SCRAM-SHA-1":
		return SCRAMSHA1, true
	case "SCRAM-SHA-256":
		return SCRAMSHA256, true
	}
	return 0, false
}

func (m Mechanism) hash() func() hash.Hash {
	if m == SCRAMSHA1 {
		return sha1.New
	}
	return sha256.New
}

// Defaults are MongoDB's, so a driver's client-side work is what it expects.
func (m Mechanism) defaultIterations() int {
	if m == SCRAMSHA1 {
		return 10000
	}
	return 15000
}

func (m Mechanism) saltLen() int {
	if m == SCRAMSHA1 {
		return 16
	}
	return 28
}

// Credential is what the server keeps for one mechanism: never the
// password, only the salted and iterated keys (RFC 5802 §3).
type Credential struct {
	Iterations int    `bson:"iterationCount"`
	Salt       []byte `bson:"salt"`
	StoredKey  []byte `bson:"storedKey"`
	ServerKey  []byte `bson:"serverKey"`
}

// scramPassword is the string a mechanism feeds to PBKDF2. MongoDB's
// SCRAM-SHA-1 uses the legacy digest hex(MD5(user ":mongo:" password));
// SCRAM-SHA-256 uses the SASLprep'd password (RFC 7677).
func scramPassword(m Mechanism, user, password string) (string, error) {
	if m == SCRAMSHA1 {
		sum := md5.Sum([]byte(user + ":mongo:" + password))
		return hex.EncodeToString(sum[:]), nil
	}
	p, err := stringprep.SASLprep.Prepare(password)
	if err != nil {
		return "", malformed("password is not valid under SASLprep")
	}
	return p, nil
}

// NewCredential derives a credential for user/password with a fresh salt.
// iterations ≤ 0 means the mechanism's default.
func NewCredential(m Mechanism, user, password string, iterations int, rnd io.Reader) (Credential, error) {
	if iterations <= 0 {
		iterations = m.defaultIterations()
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	salt := make([]byte, m.saltLen())
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return Credential{}, err
	}
	pw, err := scramPassword(m, user, password)
	if err != nil {
		return Credential{}, err
	}
	return DeriveCredential(m, pw, salt, iterations)
}

// DeriveCredential computes StoredKey and ServerKey from the SCRAM password
// (already pre-hashed or SASLprep'd), salt and iteration count.
func DeriveCredential(m Mechanism, scramPw string, salt []byte, iterations int) (Credential, error) {
	h := m.hash()
	salted, err := pbkdf2.Key(h, scramPw, salt, iterations, h().Size())
	if err != nil {
		return Credential{}, err
	}
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return Credential{
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
	}, nil
}

func hmacSum(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// ConversationOptions configure one server-side SCRAM conversation.
type ConversationOptions struct {
	Mechanism Mechanism
	// Lookup returns the user's credential for the mechanism; ok false when
	// the user does not exist or has no credential for it.
	Lookup func(user string) (cred Credential, ok bool)
	// Secret keys the decoy credential of unknown users, so that their salt
	// is stable from attempt to attempt, as a real user's is.
	Secret []byte
	// Rand is the source of the server nonce (crypto/rand when nil).
	Rand io.Reader
	// SkipEmptyExchange ends the conversation with the server's final
	// message instead of waiting for the client's empty one (MongoDB's
	// saslStart option, sent by modern drivers).
	SkipEmptyExchange bool
}

// Conversation is the server side of one SCRAM exchange. It is used by one
// goroutine (the connection's) and is good for one authentication only:
// every message after a failure or after the end is refused, which is what
// makes a replayed client-final useless.
type Conversation struct {
	opts        ConversationOptions
	step        int
	user        string
	known       bool
	cred        Credential
	gs2         string
	clientFirst string
	serverFirst string
	nonce       string
	proven      bool
}

// NewConversation starts a conversation.
func NewConversation(opts ConversationOptions) *Conversation {
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	return &Conversation{opts: opts}
}

// User is the user named in the client's first message ("" before it).
func (c *Conversation) User() string { return c.user }

// Authenticated reports whether the client has proven it knows the
// password (from the client's final message on, even before the empty
// exchange that may follow).
func (c *Conversation) Authenticated() bool { return c.proven }

const stepDone = -1

// Step consumes one client message and returns the server's answer. done
// reports a successful end; any error ends the conversation.
func (c *Conversation) Step(in []byte) (out []byte, done bool, err error) {
	switch c.step {
	case 0:
		out, err = c.first(in)
	case 1:
		out, err = c.final(in)
		if err == nil && c.opts.SkipEmptyExchange {
			c.step = stepDone
			return out, true, nil
		}
	case 2:
		if len(in) != 0 {
			err = malformed("SCRAM conversation expected an empty final message")
			break
		}
		c.step = stepDone
		return nil, true, nil
	default:
		return nil, false, &Error{Kind: KindNoConversation, Msg: "No SASL session state found"}
	}
	if err != nil {
		c.step = stepDone
		return nil, false, err
	}
	c.step++
	return out, false, nil
}

func (c *Conversation) first(in []byte) ([]byte, error) {
	cf, err := ParseClientFirst(in)
	if err != nil {
		return nil, err
	}
	c.user, c.gs2, c.clientFirst = cf.User, cf.GS2Header, cf.Bare
	if c.opts.Lookup != nil {
		c.cred, c.known = c.opts.Lookup(cf.User)
	}
	if !c.known {
		// An unknown user gets a decoy credential of the same shape: the
		// same salt on every attempt, the default iteration count, keys
		// that match no password. The rest of the exchange does the same
		// work as for a real user and fails the same way.
		c.cred = c.decoy(cf.User)
	}
	var r [24]byte
	if _, err := io.ReadFull(c.opts.Rand, r[:]); err != nil {
		return nil, err
	}
	c.nonce = cf.Nonce + base64.StdEncoding.EncodeToString(r[:])
	c.serverFirst = "r=" + c.nonce + ",s=" + base64.StdEncoding.EncodeToString(c.cred.Salt) + ",i=" + strconv.Itoa(c.cred.Iterations)
	return []byte(c.serverFirst), nil
}

func (c *Conversation) decoy(user string) Credential {
	m := c.opts.Mechanism
	h := m.hash()
	key := append([]byte(m.String()+"\x00"+user+"\x00"), c.opts.Secret...)
	salt := hmacSum(sha256.New, c.opts.Secret, key)[:m.saltLen()]
	return Credential{
		Iterations: m.defaultIterations(),
		Salt:       salt,
		StoredKey:  hmacSum(h, c.opts.Secret, append([]byte("stored"), key...)),
		ServerKey:  hmacSum(h, c.opts.Secret, append([]byte("server"), key...)),
	}
}

func (c *Conversation) final(in []byte) ([]byte, error) {
	cf, err := ParseClientFinal(in)
	if err != nil {
		return nil, err
	}
	if string(cf.ChannelBinding) != c.gs2 {
		return nil, failed("channel binding does not match the gs2 header")
	}
	if cf.Nonce != c.nonce {
		return nil, failed("nonce does not match the conversation's")
	}
	h := c.opts.Mechanism.hash()
	if len(cf.Proof) != h().Size() {
		return nil, failed("proof has the wrong length")
	}
	authMsg := []byte(c.clientFirst + "," + c.serverFirst + "," + cf.WithoutProof)
	clientSig := hmacSum(h, c.cred.StoredKey, authMsg)
	clientKey := make([]byte, len(clientSig))
	subtle.XORBytes(clientKey, cf.Proof, clientSig)
	sk := h()
	sk.Write(clientKey)
	match := subtle.ConstantTimeCompare(sk.Sum(nil), c.cred.StoredKey) == 1
	serverSig := hmacSum(h, c.cred.ServerKey, authMsg)
	if !match || !c.known {
		if !c.known {
			return nil, failed("unknown user")
		}
		return nil, failed("wrong password")
	}
	c.proven = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}
