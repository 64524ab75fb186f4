package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Writer writes one scrape in Prometheus text format.
type Writer struct {
	w    io.Writer
	seen map[string]bool
}

// Labels are name/value pairs, written in the order given.
type Labels [][2]string

func (l Labels) String() string {
	if len(l) == 0 {
		return ""
	}
	parts := make([]string, len(l))
	for i, kv := range l {
		parts[i] = fmt.Sprintf("%s=%q", kv[0], kv[1])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (w *Writer) header(name, help, typ string) {
	if w.seen[name] {
		return
	}
	w.seen[name] = true
	fmt.Fprintf(w.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// Gauge writes one gauge sample.
func (w *Writer) Gauge(name, help string, labels Labels, v float64) {
	w.header(name, help, "gauge")
	fmt.Fprintf(w.w, "%s%s %g\n", name, labels, v)
}

// Counter writes one counter sample.
func (w *Writer) Counter(name, help string, labels Labels, v float64) {
	w.header(name, help, "counter")
	fmt.Fprintf(w.w, "%s%s %g\n", name, labels, v)
}

// Histogram writes a histogram's buckets, sum and count.
func (w *Writer) Histogram(name, help string, labels Labels, h *Histogram) {
	w.header(name, help, "histogram")
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w.w, "%s_bucket%s %d\n", name, append(append(Labels{}, labels...), [2]string{"le", fmt.Sprintf("%g", b)}), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w.w, "%s_bucket%s %d\n", name, append(append(Labels{}, labels...), [2]string{"le", "+Inf"}), cum)
	fmt.Fprintf(w.w, "%s_sum%s %g\n", name, labels, math.Float64frombits(h.sum.Load()))
	fmt.Fprintf(w.w, "%s_count%s %d\n", name, labels, cum)
}

// Histogram counts observations in fixed buckets without locks.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

// NewHistogram returns a histogram with the given upper bounds (sorted).
func NewHistogram(bounds []float64) *Histogram {
	b := append([]float64(nil), bounds...)
	sort.Float64s(b)
	return &Histogram{bounds: b, counts: make([]atomic.Uint64, len(b)+1)}
}

// LatencyBuckets are upper bounds in seconds, from 50 µs to 10 s.
func LatencyBuckets() []float64 {
	return []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 10}
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Source writes its current figures on each scrape.
type Source func(w *Writer)

// Serve answers GET /metrics on addr with every source, until ctx ends.
// With pprof it also serves Go's profiler under /debug/pprof/.
func Serve(ctx context.Context, addr string, log *slog.Logger, pprof bool, sources ...Source) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w := &Writer{w: rw, seen: map[string]bool{}}
		for _, s := range sources {
			s(w)
		}
	})
	if pprof {
		mux.HandleFunc("/debug/pprof/", httppprof.Index)
		mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
