package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

// throttleClock is a fake clock for the handlers' throttle.
type throttleClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *throttleClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *throttleClock) add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// logBuffer keeps what the handlers log.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func throttledHandlers(t *testing.T) (*Handlers, *throttleClock, *logBuffer) {
	clk := &throttleClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	th := auth.NewThrottle(auth.ThrottleOptions{UserFailures: 3, PeerFailures: 5, Window: time.Minute, Now: clk.Now})
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := auth.New(auth.Options{Store: &usersStore{users: map[string][]byte{}, roles: map[string][]byte{}}, Throttle: th, Logger: log})
	for _, name := range []string{"alice", "bob"} {
		c, err := auth.NewCredential(auth.SCRAMSHA256, name, name+"-pw", 4096, nil)
		if err != nil {
			t.Fatal(err)
		}
		u := &auth.User{Name: auth.UserName{User: name, DB: "admin"}, DefaultTier: qos.Normal,
			Credentials: map[auth.Mechanism]auth.Credential{auth.SCRAMSHA256: c}}
		if err := reg.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{Auth: reg, Logger: log}), clk, logs
}

// login runs a SCRAM-SHA-256 conversation through the handlers; it
// returns the code of the reply that failed (0: authenticated).
func login(t *testing.T, h *Handlers, remote, user, pw string) mongoerr.Code {
	t.Helper()
	s := &Session{RemoteAddr: remote, Tier: qos.Normal}
	client, err := scram.SHA256.NewClient(user, pw, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	first, _ := conv.Step("")
	reply, err := h.saslStart(context.Background(), request(h, s, "admin", bson.D{
		{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte(first)}},
		{Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}}))
	if err != nil {
		e, _ := Map(err)
		return e.Code
	}
	id, _ := lookup(reply, "conversationId")
	payload, _ := lookup(reply, "payload")
	final, _ := conv.Step(string(payload.(bson.Binary).Data))
	_, err = h.saslContinue(context.Background(), request(h, s, "admin", bson.D{
		{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: id}, {Key: "payload", Value: bson.Binary{Data: []byte(final)}}}))
	if err != nil {
		e, _ := Map(err)
		if s.User != nil {
			t.Fatal("a failed conversation left a user on the session")
		}
		return e.Code
	}
	if s.User == nil || s.User.User.Name.User != user {
		t.Fatalf("authenticated as %v", s.User)
	}
	return 0
}

func TestAuthThrottleThroughTheHandlers(t *testing.T) {
	h, clk, logs := throttledHandlers(t)
	for i := 0; i < 3; i++ {
		if c := login(t, h, "10.0.0.1:5000", "alice", "wrong"); c != mongoerr.AuthenticationFailed {
			t.Fatalf("wrong password %d: code %d", i+1, c)
		}
	}
	// alice is throttled: even her password fails, from any address, with
	// the same code as a wrong one.
	if c := login(t, h, "10.0.0.9:5000", "alice", "alice-pw"); c != mongoerr.AuthenticationFailed {
		t.Fatalf("throttled user with the right password: code %d", c)
	}
	// bob, from the same address, still logs in (the address has 3
	// failures of 5).
	if c := login(t, h, "10.0.0.1:5001", "bob", "bob-pw"); c != 0 {
		t.Fatalf("another user: code %d", c)
	}
	st := h.throttleStatus()
	if v, _ := lookup(st, "throttlings"); v.(bson.D)[0].Value != int64(1) {
		t.Fatalf("serverStatus throttle: %v", st)
	}
	if v, _ := lookup(st, "refused"); v.(bson.D)[0].Value != int64(1) {
		t.Fatalf("serverStatus throttle: %v", st)
	}
	out := logs.String()
	if !strings.Contains(out, "authentication throttled after repeated failures") || !strings.Contains(out, "key=admin.alice") {
		t.Fatalf("log:\n%s", out)
	}
	if strings.Contains(out, "alice-pw") || strings.Contains(out, "bob-pw") {
		t.Fatalf("a password reached the log:\n%s", out)
	}
	// After the window, alice logs in; her success forgets her failures.
	clk.add(time.Minute)
	if c := login(t, h, "10.0.0.9:5000", "alice", "alice-pw"); c != 0 {
		t.Fatalf("after the window: code %d", c)
	}
	for i := 0; i < 2; i++ {
		login(t, h, "10.0.0.9:5000", "alice", "wrong")
	}
	if c := login(t, h, "10.0.0.9:5000", "alice", "alice-pw"); c != 0 {
		t.Fatalf("two failures after a success throttled: code %d", c)
	}
}

func TestAuthThrottleByAddress(t *testing.T) {
	h, _, _ := throttledHandlers(t)
	// Spraying: two wrong passwords each for several users from one
	// address (none reaches the per-user limit of 3); the fifth failure
	// throttles the address, IPv6 clients by their /64.
	users := []string{"alice", "bob", "carol"}
	n := 0
	for _, u := range users {
		for i := 0; i < 2 && n < 5; i++ {
			login(t, h, "[2001:db8::1]:4000", u, "wrong")
			n++
		}
	}
	if c := login(t, h, "[2001:db8::77]:4001", "bob", "bob-pw"); c != mongoerr.AuthenticationFailed {
		t.Fatalf("throttled address: code %d", c)
	}
	if c := login(t, h, "[2001:db8:0:1::1]:4001", "bob", "bob-pw"); c != 0 {
		t.Fatalf("another /64: code %d", c)
	}
}

func TestPeerKey(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:5555":         "127.0.0.1",
		"[::1]:5555":             "::/64",
		"[2001:db8:1:2:3::4]:80": "2001:db8:1:2::/64",
		"[::ffff:10.1.2.3]:80":   "::ffff:10.1.2.3",
		"@":                      "@",
		"":                       "",
	} {
		if got := peerKey(&Session{RemoteAddr: addr}); got != want {
			t.Errorf("peerKey(%q) = %q, want %q", addr, got, want)
		}
	}
}
