package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"tierdb/internal/commands"
	"tierdb/internal/metrics"
	"tierdb/internal/status"
)

// newLogger is the process's logger: --log-format text (slog's key=value
// lines) or json (one object a line, for log shippers).
func newLogger(format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("bad --log-format %q: text or json", format)
}

// serveMetrics serves, on addr, Prometheus metrics (/metrics), the status
// page (/, /status.json) and the health checks (/healthz, /readyz).
func serveMetrics(ctx context.Context, addr string, log *slog.Logger, pprof bool, h *commands.Handlers) (net.Addr, error) {
	reg := metrics.NewRegistry(commands.Version)
	if err := h.Register(reg); err != nil {
		return nil, err
	}
	page := status.New(ctx, status.Options{Snapshot: h.StatusSnapshot, Ready: h.Ready})
	return metrics.Serve(ctx, metrics.ServeOptions{Addr: addr, Log: log, Registry: reg, Pprof: pprof, Handle: page.Handlers()})
}
