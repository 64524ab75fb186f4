package commands

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"tierdb/internal/auth"
	"tierdb/internal/qos"
)

// The composition of admission, step by step with the real channel and
// gate: a lower-tier request waits first for its tier's turn (the priority
// channel) and only then for its user's share of P (the gate); a high-tier
// request goes through both at once.
func TestAdmissionIsTierThenShareThenP(t *testing.T) {
	ch, err := qos.NewChannel(qos.ChannelOptions{Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := qos.NewGate(qos.GateOptions{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Admission: ch, Fair: gate})
	defer h.Close()
	hold := func(tier qos.Tier, user string) *admissionHold {
		return &admissionHold{h: h, tier: tier, p: qos.Principal{User: user, Weight: 1}, acct: h.accounts.anon}
	}
	admitted := func(a *admissionHold) <-chan error {
		done := make(chan error, 1)
		go func() { done <- a.admit(context.Background(), time.Now()) }()
		return done
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	notYet := func(what string, done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("%s admitted (err %v)", what, err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	high := hold(qos.High, "gold")
	if err := high.admit(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	// 1. Tier: a normal request waits at the channel while the high one is
	// in process; the gate has not seen it.
	a := hold(qos.Normal, "a")
	aDone := admitted(a)
	eventually("a waits at the channel", func() bool { return ch.Stats().Tiers[qos.Normal].Waiting == 1 })
	notYet("a, behind the high tier", aDone)
	if st := gate.Stats(); st.Tiers[qos.Normal].Waiting != 0 || st.InProcess[qos.Normal] != 0 {
		t.Fatalf("the gate saw a before its tier's turn: %+v", st.Tiers[qos.Normal])
	}
	// A second high-tier request is admitted at once, past the waiting
	// lower tier and past P (which the first high one fills).
	high2 := hold(qos.High, "gold")
	if err := high2.admit(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	high2.release(time.Now())
	high.release(time.Now())
	// 2. Then P: once the high tier is done, a passes the channel and
	// takes the one slot.
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	// 3. The user's share within the tier: b passes the channel (no high
	// request) and waits at the gate, in its own user's queue.
	b := hold(qos.Normal, "b")
	bDone := admitted(b)
	eventually("b waits at the gate", func() bool { return gate.Stats().Tiers[qos.Normal].Waiting == 1 })
	notYet("b, beyond P", bDone)
	if w := ch.Stats().Tiers[qos.Normal].Waiting; w != 0 {
		t.Fatalf("b still at the channel (%d waiting)", w)
	}
	a.release(time.Now())
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	b.release(time.Now())
	if st := gate.Stats(); st.InProcess != [qos.NumTiers]int{} {
		t.Fatalf("in process after all released: %v", st.InProcess)
	}
}

// Who a request counts for in the fair share: the peer host until the
// connection authenticates, then the user with its weight and objective,
// and the next user after a second authentication.
func TestFairPrincipalFollowsTheSession(t *testing.T) {
	s := &Session{RemoteAddr: "10.1.2.3:5555"}
	if p := fairPrincipal(s); p.User != "peer 10.1.2.3" || p.Weight != 1 {
		t.Fatalf("unauthenticated: %+v", p)
	}
	ann := &auth.User{Name: auth.UserName{User: "ann", DB: "app"}, Weight: 3, SLO: 20 * time.Millisecond}
	s.User = &auth.Principal{User: ann}
	if p := fairPrincipal(s); p.User != "app.ann" || p.Weight != 3 || p.SLO != 20*time.Millisecond {
		t.Fatalf("ann: %+v", p)
	}
	ann.Weight = 2 // updateUser: the weight in force at each request
	if p := fairPrincipal(s); p.Weight != 2 {
		t.Fatalf("ann after updateUser: %+v", p)
	}
	s.User = &auth.Principal{User: &auth.User{Name: auth.UserName{User: "bob", DB: "app"}}}
	if p := fairPrincipal(s); p.User != "app.bob" || p.Weight != 1 {
		t.Fatalf("bob: %+v", p)
	}
	if p := fairPrincipal(nil); p.User != "" || p.Weight != 1 {
		t.Fatalf("no session: %+v", p)
	}
}
