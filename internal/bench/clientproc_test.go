package bench

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// A recorder crosses from the client process to the harness unchanged:
// everything mergeGroup and the per-period read series read from it.
func TestRecorderCrossesTheProcessBoundary(t *testing.T) {
	r := newRecorder(true, 7)
	r.keepPeriods(time.Second)
	r.record(time.Millisecond, 3*time.Millisecond, nil)
	r.recordRead(1500*time.Millisecond, 1502*time.Millisecond, nil)
	r.record(2*time.Second, 2*time.Second+time.Millisecond, errors.New("boom"))
	b, err := json.Marshal(r.wire())
	if err != nil {
		t.Fatal(err)
	}
	var w recorderWire
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	got := w.recorder()
	got.reservoirR, r.reservoirR = nil, nil // the sampler's state stays behind
	got.seen = r.seen
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("after the round trip\n%+v\nwant\n%+v", got, r)
	}
	g := Group{Name: "ts"}
	a, b2 := mergeGroup(g, 1, []*recorder{r}), mergeGroup(g, 1, []*recorder{got})
	if !reflect.DeepEqual(a, b2) {
		t.Fatalf("merged: %+v, want %+v", b2, a)
	}
}
