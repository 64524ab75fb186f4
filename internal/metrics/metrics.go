package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tierdb/internal/buildinfo"
)

// Labels are name/value pairs. The exposition sorts them by name.
type Labels [][2]string

// Writer turns the figures a Source reads at scrape time (counts kept by
// other packages, queue lengths, per-user weights) into constant metrics of
// one scrape. Histograms are not written here: they are real
// prometheus.Histograms, observed where the durations happen.
type Writer struct {
	ch chan<- prometheus.Metric
}

// NewWriter writes to ch; for Collect methods and tests.
func NewWriter(ch chan<- prometheus.Metric) *Writer { return &Writer{ch: ch} }

// Gauge writes one gauge sample.
func (w *Writer) Gauge(name, help string, labels Labels, v float64) {
	w.write(name, help, prometheus.GaugeValue, labels, v)
}

// Counter writes one counter sample: v must be a count that only grows
// over the life of the process.
func (w *Writer) Counter(name, help string, labels Labels, v float64) {
	w.write(name, help, prometheus.CounterValue, labels, v)
}

func (w *Writer) write(name, help string, typ prometheus.ValueType, labels Labels, v float64) {
	names := make([]string, len(labels))
	values := make([]string, len(labels))
	for i, kv := range labels {
		names[i], values[i] = kv[0], kv[1]
	}
	desc := prometheus.NewDesc(name, help, names, nil)
	m, err := prometheus.NewConstMetric(desc, typ, v, values...)
	if err != nil {
		m = prometheus.NewInvalidMetric(desc, err)
	}
	w.ch <- m
}

// Source writes its current figures on each scrape.
type Source func(w *Writer)

// Collector is a prometheus.Collector of sources. It describes nothing in
// advance (an "unchecked" collector): the families it writes depend on
// what runs (users, replicas, QoS on or off). The registry still checks
// every scrape for consistency (one help text and type per name, no
// duplicate series).
func Collector(sources ...Source) prometheus.Collector { return sourceCollector(sources) }

type sourceCollector []Source

func (sourceCollector) Describe(chan<- *prometheus.Desc) {}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	w := NewWriter(ch)
	for _, s := range c {
		s(w)
	}
}

// LatencyBuckets are upper bounds in seconds, from 50 µs to 10 s.
func LatencyBuckets() []float64 {
	return []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10}
}

// WaitBuckets are the upper bounds of waits by design (awaitable hello,
// up to a minute): from 10 ms to 60 s.
func WaitBuckets() []float64 {
	return []float64{10e-3, 100e-3, 500e-3, 1, 2.5, 5, 10, 15, 30, 60}
}

// NewRegistry returns a registry with Go's runtime collector, the process
// collector (CPU, memory, file descriptors) and tierdb_build_info (version,
// commit and Go version from internal/buildinfo). compat is the MongoDB
// version tierdb answers as.
func NewRegistry(compat string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	b := buildinfo.Read()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tierdb_build_info",
			Help: "Always 1; the labels describe the running binary.",
			ConstLabels: prometheus.Labels{
				"version": b.Version, "commit": b.ShortCommit(), "goversion": b.GoVersion, "compat": compat,
			},
		}, func() float64 { return 1 }),
	)
	return reg
}

// ServeOptions configure the metrics listener.
type ServeOptions struct {
	Addr     string
	Log      *slog.Logger
	Registry *prometheus.Registry
	// Pprof also serves Go's profiler under /debug/pprof/.
	Pprof bool
	// Handle adds handlers by pattern (the status page, health checks).
	Handle map[string]http.Handler
}

// Serve answers GET /metrics on o.Addr from o.Registry, and o.Handle's
// patterns, until ctx ends.
func Serve(ctx context.Context, o ServeOptions) (net.Addr, error) {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.InstrumentMetricHandler(o.Registry, promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      o.Registry,
	})))
	for pattern, h := range o.Handle {
		mux.Handle(pattern, h)
	}
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", httppprof.Index)
		mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
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
