package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestRegistryHasRuntimeProcessAndBuildInfo(t *testing.T) {
	reg := NewRegistry("6.0.0")
	if err := reg.Register(Collector(func(w *Writer) {
		w.Counter("tierdb_things_total", "Things.", Labels{{"tier", "high"}}, 3)
		w.Counter("tierdb_things_total", "Things.", Labels{{"tier", "low"}}, 1)
		w.Gauge("tierdb_level", "Level.", nil, 0.5)
	})); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{}
	samples := map[string]int{}
	for _, mf := range mfs {
		types[mf.GetName()] = mf.GetType()
		samples[mf.GetName()] = len(mf.GetMetric())
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "tierdb_build_info"} {
		if _, ok := types[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	if types["tierdb_things_total"] != dto.MetricType_COUNTER || samples["tierdb_things_total"] != 2 {
		t.Errorf("tierdb_things_total: %v, %d samples", types["tierdb_things_total"], samples["tierdb_things_total"])
	}
	if types["tierdb_level"] != dto.MetricType_GAUGE {
		t.Errorf("tierdb_level: %v", types["tierdb_level"])
	}
}

func TestInconsistentHelpIsAnError(t *testing.T) {
	reg := NewRegistry("6.0.0")
	reg.MustRegister(Collector(func(w *Writer) {
		w.Gauge("tierdb_x", "One.", Labels{{"a", "1"}}, 1)
		w.Gauge("tierdb_x", "Two.", Labels{{"a", "2"}}, 1)
	}))
	if _, err := reg.Gather(); err == nil {
		t.Fatal("two help texts for one family were accepted")
	}
}
