package auth

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// The test vectors of RFC 5802 §5 (SCRAM-SHA-1) and RFC 7677 §3
// (SCRAM-SHA-256): user "user", password "pencil". The server's half of the
// nonce is fixed by the RFCs, so these tests set the conversation's state
// after the first message and check the proof and the server signature.
var vectors = []struct {
	name                                  string
	mech                                  Mechanism
	clientFirst, serverFirst, clientFinal string
	serverFinal                           string
	salt                                  string
	iterations                            int
}{
	{
		name:        "RFC 5802 SCRAM-SHA-1",
		mech:        SCRAMSHA1,
		clientFirst: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
		serverFirst: "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
		clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
		serverFinal: "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
		salt:        "QSXCR+Q6sek8bf92",
		iterations:  4096,
	},
	{
		name:        "RFC 7677 SCRAM-SHA-256",
		mech:        SCRAMSHA256,
		clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
		serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
		salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
		iterations:  4096,
	},
}

func vectorConversation(t *testing.T, i int) *Conversation {
	v := vectors[i]
	salt, _ := base64.StdEncoding.DecodeString(v.salt)
	// The RFCs' SCRAM password is "pencil" itself (no MongoDB pre-hash).
	cred, err := DeriveCredential(v.mech, "pencil", salt, v.iterations)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := ParseClientFirst([]byte(v.clientFirst))
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(strings.Split(v.serverFirst, ",")[0], "r=")
	return &Conversation{opts: ConversationOptions{Mechanism: v.mech, SkipEmptyExchange: true}, step: 1, user: cf.User,
		known: true, cred: cred, gs2: cf.GS2Header, clientFirst: cf.Bare, serverFirst: v.serverFirst, nonce: nonce}
}

func TestSCRAMVectors(t *testing.T) {
	for i, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			c := vectorConversation(t, i)
			out, done, err := c.Step([]byte(v.clientFinal))
			if err != nil || !done || string(out) != v.serverFinal {
				t.Fatalf("got %q done=%v err=%v, want %q", out, done, err, v.serverFinal)
			}
			// The conversation is over: replaying the final message fails.
			if _, _, err := c.Step([]byte(v.clientFinal)); kindOf(err) != KindNoConversation {
				t.Fatalf("replay after the end: %v", err)
			}
		})
	}
}

func TestSCRAMWrongProofFails(t *testing.T) {
	for i, v := range vectors {
		c := vectorConversation(t, i)
		bad := v.clientFinal[:len(v.clientFinal)-6] + "AAAAA="
		if _, _, err := c.Step([]byte(bad)); kindOf(err) != KindFailed && kindOf(err) != KindMalformed {
			t.Fatalf("%s: a wrong proof gave %v", v.name, err)
		}
	}
}

func kindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// A full conversation against an independent client implementation (the
// one MongoDB's Go driver uses), with MongoDB's SCRAM-SHA-1 pre-hash.
func TestConversationWithDriverClient(t *testing.T) {
	for _, m := range Mechanisms {
		t.Run(m.String(), func(t *testing.T) {
			cred, err := NewCredential(m, "alice", "s3cret ü", 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			lookup := func(u string) (Credential, bool) { return cred, u == "alice" }
			for _, tc := range []struct {
				user, pw string
				ok       bool
			}{{"alice", "s3cret ü", true}, {"alice", "wrong", false}, {"bob", "s3cret ü", false}} {
				conv := NewConversation(ConversationOptions{Mechanism: m, Lookup: lookup, Secret: []byte("k")})
				client := driverClient(t, m, tc.user, tc.pw).NewConversation()
				msg, err := client.Step("")
				if err != nil {
					t.Fatal(err)
				}
				out, _, err := conv.Step([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				msg, err = client.Step(string(out))
				if err != nil {
					t.Fatal(err)
				}
				out, done, err := conv.Step([]byte(msg))
				if !tc.ok {
					if kindOf(err) != KindFailed || err.(*Error).Msg != FailedMsg {
						t.Fatalf("%s/%s: want the one failure, got %v", tc.user, tc.pw, err)
					}
					continue
				}
				if err != nil || done {
					t.Fatalf("final: %v done=%v", err, done)
				}
				if _, err := client.Step(string(out)); err != nil {
					t.Fatalf("client rejects the server signature: %v", err)
				}
				if _, done, err := conv.Step(nil); err != nil || !done {
					t.Fatalf("empty exchange: %v %v", done, err)
				}
			}
		})
	}
}

func driverClient(t *testing.T, m Mechanism, user, pw string) *scram.Client {
	var c *scram.Client
	var err error
	if m == SCRAMSHA1 {
		sum := md5.Sum([]byte(user + ":mongo:" + pw))
		c, err = scram.SHA1.NewClientUnprepped(user, hex.EncodeToString(sum[:]), "")
	} else {
		c, err = scram.SHA256.NewClient(user, pw, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An unknown user sees the same salt on every attempt (as a real user
// does) and a salt of the real length with the default iteration count.
func TestDecoyCredentialIsStable(t *testing.T) {
	first := func() string {
		c := NewConversation(ConversationOptions{Mechanism: SCRAMSHA256, Lookup: func(string) (Credential, bool) { return Credential{}, false }, Secret: []byte("k")})
		out, _, err := c.Step([]byte("n,,n=nobody,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(out), ",")
		return parts[1] + "," + parts[2]
	}
	a, b := first(), first()
	if a != b || !strings.HasSuffix(a, ",i=15000") {
		t.Fatalf("decoy salts differ or wrong iterations: %q %q", a, b)
	}
}

func TestNonceMismatchFails(t *testing.T) {
	cred, _ := NewCredential(SCRAMSHA256, "u", "p", 4096, nil)
	conv := NewConversation(ConversationOptions{Mechanism: SCRAMSHA256, Lookup: func(string) (Credential, bool) { return cred, true }})
	if _, _, err := conv.Step([]byte("n,,n=u,r=clientnonce")); err != nil {
		t.Fatal(err)
	}
	final := "c=biws,r=clientnonceXXXX,p=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	if _, _, err := conv.Step([]byte(final)); kindOf(err) != KindFailed {
		t.Fatalf("want failed, got %v", err)
	}
}

func TestParseClientFirst(t *testing.T) {
	good := map[string]string{
		"n,,n=user,r=abc":     "user",
		"y,,n=a=2Cb=3Dc,r=x":  "a,b=c",
		"n,,n=üser,r=n0nce!~": "üser",
	}
	for in, user := range good {
		cf, err := ParseClientFirst([]byte(in))
		if err != nil || cf.User != user {
			t.Errorf("%q: got %q, %v", in, cf.User, err)
		}
	}
	bad := []string{"", "n,", "n,,", "x,,n=u,r=a", "p=tls-unique,,n=u,r=a", "n,a=admin,n=u,r=a", "n,,m=ext,n=u,r=a",
		"n,,n=u", "n,,r=a,n=u", "n,,n=,r=a", "n,,n=a=2X,r=a", "n,,n=u,r=", "n,,n=u,r=a b", "n,,n=u,r=a,x=y",
		"n,,n=u\x00,r=a", "n,,n=\xff,r=a", "n,,n=u,r=a\x7f", strings.Repeat("n", 5000)}
	for _, in := range bad {
		if _, err := ParseClientFirst([]byte(in)); kindOf(err) != KindMalformed {
			t.Errorf("%q: want malformed, got %v", in, err)
		}
	}
}

func TestParseClientFinal(t *testing.T) {
	cf, err := ParseClientFinal([]byte("c=biws,r=abc,p=AAAA"))
	if err != nil || cf.Nonce != "abc" || cf.WithoutProof != "c=biws,r=abc" || string(cf.ChannelBinding) != "n,," {
		t.Fatalf("%+v %v", cf, err)
	}
	bad := []string{"", "c=biws,r=abc", "c=biws,r=abc,p=", "c=biws,r=abc,p=!!!!", "c=bi,r=abc,p=AAAA", "r=abc,c=biws,p=AAAA",
		"c=biws,p=AAAA", "c=biws,r=,p=AAAA", "c=biws,r=a,x=1,p=AAAA", "c=biws,r=abc,p=AAA"}
	for _, in := range bad {
		if _, err := ParseClientFinal([]byte(in)); kindOf(err) != KindMalformed {
			t.Errorf("%q: want malformed, got %v", in, err)
		}
	}
}

func TestSASLprepAndPreHash(t *testing.T) {
	// SCRAM-SHA-256 passwords are SASLprep'd: U+00AD (soft hyphen) maps to
	// nothing, so "pen\u00adcil" and "pencil" are the same password.
	a, _ := scramPassword(SCRAMSHA256, "u", "pen\u00adcil")
	if a != "pencil" {
		t.Fatalf("SASLprep: %q", a)
	}
	if _, err := scramPassword(SCRAMSHA256, "u", "bad\u0007"); kindOf(err) != KindMalformed {
		t.Fatalf("a prohibited character must be refused: %v", err)
	}
	// SCRAM-SHA-1 uses MongoDB's digest of "user:mongo:password".
	b, _ := scramPassword(SCRAMSHA1, "user", "pencil")
	sum := md5.Sum([]byte("user:mongo:pencil"))
	if b != hex.EncodeToString(sum[:]) {
		t.Fatalf("pre-hash: %q", b)
	}
}
