package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// An awaitable hello is a wait by design: it lands in the long-poll
// histogram, never in the tier's or the command's latency, and never in
// the slow log.
func TestAwaitableHelloIsALongPollNotLatency(t *testing.T) {
	var logBuf bytes.Buffer
	h := New(Options{Logger: slog.New(slog.NewJSONHandler(&logBuf, nil)), SlowThreshold: 10 * time.Millisecond})
	defer h.Close()
	reg := prometheus.NewRegistry() // the histograms (Metrics needs a store)
	reg.MustRegister(h.instr.collectors...)
	hello := func(extra ...bson.E) {
		reply := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: append(bson.D{{Key: "hello", Value: 1}}, extra...)})
		if ok, _ := lookup(reply, "ok"); ok != 1.0 {
			t.Fatalf("hello: %v", reply)
		}
	}
	hello()
	tv := bson.D{{Key: "processId", Value: h.processID}, {Key: "counter", Value: int64(0)}}
	hello(bson.E{Key: "topologyVersion", Value: tv}, bson.E{Key: "maxAwaitTimeMS", Value: int64(60)})
	// isMaster counts as hello (the canonical name), not as a label of its own.
	reply := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "isMaster", Value: 1}}})
	if ok, _ := lookup(reply, "ok"); ok != 1.0 {
		t.Fatalf("isMaster: %v", reply)
	}
	counts := histogramCounts(t, reg)
	if counts[`tierdb_long_poll_duration_seconds{command=hello}`] != 1 {
		t.Errorf("long polls: %v", counts)
	}
	if counts[`tierdb_command_duration_seconds{command=hello,tier=normal}`] != 2 || counts[`tierdb_request_duration_seconds{tier=normal}`] != 2 {
		t.Errorf("latency: %v", counts)
	}
	if strings.Contains(logBuf.String(), "slow operation") {
		t.Errorf("a long-poll was logged as slow: %s", logBuf.String())
	}
}

// An operation over the threshold is logged with its fields and kept for
// the status page.
func TestSlowOperationIsLoggedAndKept(t *testing.T) {
	var logBuf bytes.Buffer
	h := New(Options{Logger: slog.New(slog.NewJSONHandler(&logBuf, nil)), SlowThreshold: 5 * time.Millisecond, TestCommands: true})
	defer h.Close()
	h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "sleep", Value: 1}, {Key: "millis", Value: int32(20)}}})
	h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "ping", Value: 1}}})
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(logBuf.Bytes()), &line); err != nil {
		t.Fatalf("one JSON line expected: %v\n%s", err, logBuf.String())
	}
	if line["msg"] != "slow operation" || line["command"] != "sleep" || line["tier"] != "normal" || line["db"] != "admin" ||
		line["user"] != "(unauthenticated)" || line["duration_ms"].(float64) < 20 {
		t.Errorf("log line: %v", line)
	}
	ops := h.slow.Recent()
	if len(ops) != 1 || ops[0].Command != "sleep" || ops[0].DurationMs < 20 {
		t.Errorf("kept: %+v", ops)
	}
}

// histogramCounts maps "name{label=value,…}" to the sample count of every
// histogram gathered.
func histogramCounts(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetHistogram().GetSampleCount()
		}
	}
	return out
}
