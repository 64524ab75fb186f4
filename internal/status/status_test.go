package status

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSlowLogKeepsTheNewestFirst(t *testing.T) {
	l := NewSlowLog(3)
	if got := l.Recent(); len(got) != 0 {
		t.Fatalf("empty log: %v", got)
	}
	for i := range 5 {
		l.Add(SlowOp{Command: string(rune('a' + i))})
	}
	var got []string
	for _, op := range l.Recent() {
		got = append(got, op.Command)
	}
	if strings.Join(got, "") != "edc" {
		t.Fatalf("got %v, want e d c", got)
	}
}

func TestRatesAndShares(t *testing.T) {
	t0 := time.Unix(1000, 0)
	base := &Snapshot{Time: t0,
		Tiers:    []Tier{{Name: "high", Admitted: 100, Requests: 100, LatencySeconds: 1}},
		Users:    []User{{Name: "a", Tier: "high", Ops: 10}, {Name: "b", Tier: "high", Ops: 10}},
		Replicas: []Replica{{Name: "node0", ReadsServed: 0}, {Name: "node1", ReadsServed: 0}},
	}
	cur := &Snapshot{Time: t0.Add(2 * time.Second),
		Tiers:    []Tier{{Name: "high", Admitted: 300, Requests: 300, LatencySeconds: 3}},
		Users:    []User{{Name: "a", Tier: "high", Ops: 40}, {Name: "b", Tier: "high", Ops: 20}},
		Replicas: []Replica{{Name: "node0", ReadsServed: 30}, {Name: "node1", ReadsServed: 10}},
	}
	fillRates(cur, base)
	if cur.Tiers[0].AdmittedPerSec != 100 || cur.Tiers[0].MeanLatencyMs != 10 {
		t.Fatalf("tier: %+v", cur.Tiers[0])
	}
	if cur.Users[0].OpsPerSec != 15 || cur.Users[0].Share != 0.75 || cur.Users[1].Share != 0.25 {
		t.Fatalf("users: %+v", cur.Users)
	}
	if cur.Replicas[0].ReadShare != 0.75 || cur.Replicas[1].ReadsPerSec != 5 {
		t.Fatalf("replicas: %+v", cur.Replicas)
	}
}

func TestHandlers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := errors.New("PostgreSQL primary node0 does not answer")
	s := New(ctx, Options{
		Snapshot: func() *Snapshot { return &Snapshot{Time: time.Now(), Tiers: []Tier{{Name: "high"}}} },
		Ready:    func(context.Context) error { return ready },
	})
	mux := http.NewServeMux()
	for p, h := range s.Handlers() {
		mux.Handle(p, h)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	if r := get("/"); r.Code != 200 || !strings.Contains(r.Body.String(), "/static/app.js") {
		t.Fatalf("/: %d %s", r.Code, r.Body.String())
	}
	for _, f := range []string{"/static/app.js", "/static/style.css"} {
		if r := get(f); r.Code != 200 || r.Body.Len() < 100 {
			t.Fatalf("%s: %d", f, r.Code)
		}
	}
	if r := get("/nothing"); r.Code != 404 {
		t.Fatalf("/nothing: %d", r.Code)
	}
	var snap Snapshot
	if r := get("/status.json"); r.Code != 200 || json.Unmarshal(r.Body.Bytes(), &snap) != nil || len(snap.Tiers) != 1 {
		t.Fatalf("/status.json: %d %s", r.Code, r.Body.String())
	}
	if r := get("/healthz"); r.Code != 200 {
		t.Fatalf("/healthz: %d", r.Code)
	}
	if r := get("/readyz"); r.Code != 503 || !strings.Contains(r.Body.String(), "does not answer") {
		t.Fatalf("/readyz: %d %s", r.Code, r.Body.String())
	}
	ready = nil
	if r := get("/readyz"); r.Code != 200 {
		t.Fatalf("/readyz when ready: %d", r.Code)
	}
}
