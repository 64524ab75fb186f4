package auth

import (
	"strings"
	"testing"
)

// FuzzSCRAMMessages feeds arbitrary bytes to both parsers and to a live
// server conversation. Nothing may panic; whatever parses must round-trip
// to what was sent (the AuthMessage is built from the bytes as sent); and
// no input may end a conversation successfully without the password.
func FuzzSCRAMMessages(f *testing.F) {
	for _, v := range vectors {
		f.Add([]byte(v.clientFirst))
		f.Add([]byte(v.clientFinal))
	}
	for _, s := range []string{"", "n,,", "y,,n=a=2C,r=x", "p=x,,n=u,r=a", "c=biws,r=,p=", "n,a=b,n=c,r=d", "c=eSws,r=abc,p=AAAA"} {
		f.Add([]byte(s))
	}
	cred, err := NewCredential(SCRAMSHA256, "user", "pencil", 4096, nil)
	if err != nil {
		f.Fatal(err)
	}
	lookup := func(u string) (Credential, bool) { return cred, u == "user" }
	f.Fuzz(func(t *testing.T, msg []byte) {
		if cf, err := ParseClientFirst(msg); err == nil {
			if cf.GS2Header+cf.Bare != string(msg) || !strings.HasSuffix(cf.Bare, "r="+cf.Nonce) || cf.User == "" {
				t.Fatalf("client-first %q parsed as %+v", msg, cf)
			}
		} else if kindOf(err) != KindMalformed {
			t.Fatalf("client-first %q: unexpected error kind %v", msg, err)
		}
		if cf, err := ParseClientFinal(msg); err == nil {
			if !strings.HasPrefix(string(msg), cf.WithoutProof+",p=") || len(cf.Proof) == 0 {
				t.Fatalf("client-final %q parsed as %+v", msg, cf)
			}
		} else if kindOf(err) != KindMalformed {
			t.Fatalf("client-final %q: unexpected error kind %v", msg, err)
		}
		// As the second message of a real conversation.
		conv := NewConversation(ConversationOptions{Mechanism: SCRAMSHA256, Lookup: lookup, SkipEmptyExchange: true})
		if _, _, err := conv.Step([]byte("n,,n=user,r=fuzz")); err != nil {
			t.Fatal(err)
		}
		if _, done, err := conv.Step(msg); err == nil || done {
			t.Fatalf("%q authenticated without the password", msg)
		}
	})
}
