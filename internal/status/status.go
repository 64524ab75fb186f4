package status

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sync"
	"time"
)

// Snapshot is what the status page shows. Cumulative counts (Admitted,
// Ops, ReadsServed…) are filled by whoever takes the snapshot; the rates
// and shares beside them are filled by the Server.
type Snapshot struct {
	Time          time.Time `json:"time"`
	Version       string    `json:"version"`
	Commit        string    `json:"commit"`
	UptimeSeconds float64   `json:"uptimeSeconds"`
	Connections   int64     `json:"connections"`
	// QoS: the priority channel and fair-share gate are on.
	QoS         bool `json:"qos"`
	Threshold   int  `json:"threshold"`
	Parallelism int  `json:"parallelism"`
	// SlowMS is the slow-operation threshold (0: the slow log is off).
	SlowMS int64  `json:"slowMs"`
	Tiers  []Tier `json:"tiers"`
	Users  []User `json:"users"`
	// Replicas are the nodes, primary first; empty without replication.
	Replicas []Replica `json:"replicas"`
	// BalanceFraction is the read balancer's share of adaptive reads sent
	// to standbys; nil without replication.
	BalanceFraction *float64 `json:"balanceFraction"`
	// SlowOps are the most recent slow operations, newest first.
	SlowOps []SlowOp `json:"slowOps"`
	// Window is the span in seconds the rates were measured over (0: no
	// earlier snapshot yet).
	Window float64 `json:"windowSeconds"`
}

// Tier is one tier's figures.
type Tier struct {
	Name      string `json:"name"`
	InProcess int    `json:"inProcess"`
	Waiting   int    `json:"waiting"`
	// Admitted counts requests admitted by the priority channel (with QoS
	// off: every work request); AdmittedPerSec is its rate.
	Admitted       uint64  `json:"admitted"`
	AdmittedPerSec float64 `json:"admittedPerSec"`
	// Requests and LatencySeconds are the count and sum of the tier's
	// request-duration histogram (waits by design excluded);
	// MeanLatencyMs is their ratio over the window.
	Requests       uint64  `json:"requests"`
	LatencySeconds float64 `json:"latencySeconds"`
	MeanLatencyMs  float64 `json:"meanLatencyMs"`
	// Wait percentiles of the channel's last admissions that waited.
	WaitP50Ms float64 `json:"waitP50Ms"`
	WaitP99Ms float64 `json:"waitP99Ms"`
	WaitMaxMs float64 `json:"waitMaxMs"`
	// Nice and IOPriority are the configured OS treatment of the tier's
	// backends (nil/empty with QoS off).
	Nice          *int      `json:"nice"`
	IOPriority    string    `json:"ioPriority"`
	BackendsInUse int       `json:"backendsInUse"`
	BackendsOpen  int       `json:"backendsOpen"`
	Backends      []Backend `json:"backends"`
}

// Backend is one PostgreSQL backend process of a tier's pool.
type Backend struct {
	PID int `json:"pid"`
	// Nice is the nice value the process has now (read from /proc); nil
	// when it could not be read.
	Nice *int `json:"nice"`
}

// User is one user's figures at one tier.
type User struct {
	Name string `json:"name"`
	Tier string `json:"tier"`
	// Ops counts the user's work requests at the tier; OpsPerSec is its
	// rate and Share the user's part of the tier's rate.
	Ops       uint64  `json:"ops"`
	OpsPerSec float64 `json:"opsPerSec"`
	Share     float64 `json:"share"`
	// Weight, Waiting and InProcess are the fair-share gate's.
	Weight    float64 `json:"weight"`
	Waiting   int     `json:"waiting"`
	InProcess int     `json:"inProcess"`
	// SLO is the latency objective's state ("met", "missed", "cannot be
	// met"), empty when the user has none.
	SLO         string  `json:"slo"`
	P999Ms      float64 `json:"p999Ms"`
	ObjectiveMs float64 `json:"objectiveMs"`
}

// Replica is one node of the replica set.
type Replica struct {
	Name string `json:"name"`
	Role string `json:"role"` // "primary", "standby", "down"
	Up   bool   `json:"up"`
	// LagBytes is WAL the primary wrote that this node has not replayed.
	LagBytes uint64 `json:"lagBytes"`
	// StalenessMs bounds how old the node's view may be; nil when
	// unbounded (no recent poll).
	StalenessMs *float64 `json:"stalenessMs"`
	ReadsServed int64    `json:"readsServed"`
	ReadsPerSec float64  `json:"readsPerSec"`
	// ReadShare is the node's part of the reads over the window (over
	// the whole run when there were none).
	ReadShare float64 `json:"readShare"`
}

// SlowOp is one operation of the slow log. It never holds document
// contents: names, durations and the plan summary only.
type SlowOp struct {
	Time       time.Time `json:"time"`
	User       string    `json:"user"`
	Client     string    `json:"client"`
	Tier       string    `json:"tier"`
	Command    string    `json:"command"`
	DB         string    `json:"db"`
	Collection string    `json:"collection,omitempty"`
	DurationMs float64   `json:"durationMs"`
	Plan       string    `json:"plan,omitempty"`
	// ErrorCode is the MongoDB error code when the operation failed.
	ErrorCode int32 `json:"errorCode,omitempty"`
}

// SlowLog keeps the last slow operations in a bounded ring.
type SlowLog struct {
	mu   sync.Mutex
	ring []SlowOp
	next int
	full bool
}

// NewSlowLog keeps the last n operations.
func NewSlowLog(n int) *SlowLog { return &SlowLog{ring: make([]SlowOp, max(n, 1))} }

// Add records op.
func (l *SlowLog) Add(op SlowOp) {
	l.mu.Lock()
	l.ring[l.next] = op
	l.next = (l.next + 1) % len(l.ring)
	l.full = l.full || l.next == 0
	l.mu.Unlock()
}

// Recent returns the operations kept, newest first.
func (l *SlowLog) Recent() []SlowOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	out := make([]SlowOp, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, l.ring[(l.next-i+len(l.ring))%len(l.ring)])
	}
	return out
}

// Options configure a Server.
type Options struct {
	// Snapshot takes the current figures.
	Snapshot func() *Snapshot
	// Ready returns nil when tierdb can serve (PostgreSQL answers, the
	// primary is known), else why not.
	Ready func(ctx context.Context) error
	// Every is how often a snapshot is kept for the rates (default 1 s);
	// Window how far back the rates look (default 5 s).
	Every, Window time.Duration
}

// Server serves the page, /status.json and the health checks.
type Server struct {
	opts Options
	mu   sync.Mutex
	kept []*Snapshot // oldest first, within the window
}

//go:embed assets
var assets embed.FS

// New returns a Server that keeps a snapshot every opts.Every until ctx
// ends.
func New(ctx context.Context, opts Options) *Server {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Window <= 0 {
		opts.Window = 5 * time.Second
	}
	s := &Server{opts: opts}
	go s.sample(ctx)
	return s
}

func (s *Server) sample(ctx context.Context) {
	t := time.NewTicker(s.opts.Every)
	defer t.Stop()
	for {
		s.keep(s.opts.Snapshot())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) keep(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(s.kept, snap)
	// Keep one snapshot older than the window, so there is always a
	// full window to measure over.
	for len(s.kept) > 2 && snap.Time.Sub(s.kept[1].Time) >= s.opts.Window {
		s.kept = s.kept[1:]
	}
}

// baseline is the oldest kept snapshot at most Window (plus a tick) old
// and at least half a tick older than now.
func (s *Server) baseline(now time.Time) *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.kept {
		age := now.Sub(k.Time)
		if age <= s.opts.Window+s.opts.Every && age >= s.opts.Every/2 {
			return k
		}
	}
	return nil
}

// Current takes a snapshot and fills its rates against the kept ones.
func (s *Server) Current() *Snapshot {
	cur := s.opts.Snapshot()
	if base := s.baseline(cur.Time); base != nil {
		fillRates(cur, base)
	} else {
		fillShares(cur)
	}
	return cur
}

// fillRates works out the per-second figures of cur since base.
func fillRates(cur, base *Snapshot) {
	dt := cur.Time.Sub(base.Time).Seconds()
	if dt <= 0 {
		return
	}
	cur.Window = dt
	tiers := map[string]Tier{}
	for _, t := range base.Tiers {
		tiers[t.Name] = t
	}
	for i := range cur.Tiers {
		t := &cur.Tiers[i]
		b, ok := tiers[t.Name]
		if !ok {
			continue
		}
		t.AdmittedPerSec = float64(sub(t.Admitted, b.Admitted)) / dt
		if n := sub(t.Requests, b.Requests); n > 0 {
			t.MeanLatencyMs = (t.LatencySeconds - b.LatencySeconds) / float64(n) * 1000
		}
	}
	users := map[string]uint64{}
	for _, u := range base.Users {
		users[u.Name+"\x00"+u.Tier] = u.Ops
	}
	// A user or node missing from base had no count then: its rate
	// starts from zero.
	for i := range cur.Users {
		u := &cur.Users[i]
		u.OpsPerSec = float64(sub(u.Ops, users[u.Name+"\x00"+u.Tier])) / dt
	}
	reads := map[string]int64{}
	for _, r := range base.Replicas {
		reads[r.Name] = r.ReadsServed
	}
	for i := range cur.Replicas {
		r := &cur.Replicas[i]
		if b := reads[r.Name]; r.ReadsServed >= b {
			r.ReadsPerSec = float64(r.ReadsServed-b) / dt
		}
	}
	fillShares(cur)
}

// fillShares sets each user's share of its tier's throughput and each
// replica's share of the reads.
func fillShares(cur *Snapshot) {
	total := map[string]float64{}
	for _, u := range cur.Users {
		total[u.Tier] += u.OpsPerSec
	}
	for i := range cur.Users {
		if t := total[cur.Users[i].Tier]; t > 0 {
			cur.Users[i].Share = cur.Users[i].OpsPerSec / t
		}
	}
	var rate float64
	var all int64
	for _, r := range cur.Replicas {
		rate += r.ReadsPerSec
		all += r.ReadsServed
	}
	for i := range cur.Replicas {
		r := &cur.Replicas[i]
		switch {
		case rate > 0:
			r.ReadShare = r.ReadsPerSec / rate
		case all > 0:
			r.ReadShare = float64(r.ReadsServed) / float64(all)
		}
	}
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // a counter that went back (never expected)
	}
	return a - b
}

// Handlers are the server's routes for the metrics listener's mux.
func (s *Server) Handlers() map[string]http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	return map[string]http.Handler{
		"GET /{$}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-cache")
			http.ServeFileFS(w, r, static, "index.html")
		}),
		"GET /static/": http.StripPrefix("/static/", noCache(files)),
		"GET /status.json": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(s.Current())
		}),
		"GET /healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok\n"))
		}),
		"GET /readyz": http.HandlerFunc(s.readyz),
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if s.opts.Ready != nil {
		if err := s.opts.Ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}

func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
