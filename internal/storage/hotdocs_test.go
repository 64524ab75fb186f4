package storage

import (
	"fmt"
	"testing"
	"time"
)

// A document is hot for hotFor after a lost swap (then forgotten), and at
// most hotDocsMax documents are remembered: a loss beyond that is marked
// only once older ones have expired.
func TestHotDocsExpireAndStayBounded(t *testing.T) {
	var h hotDocs
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return t0.Add(d) } }
	if h.hot("a", at(0)) {
		t.Fatal("hot before any loss")
	}
	h.mark("a", t0)
	if !h.hot("a", at(hotFor-time.Millisecond)) || h.hot("b", at(0)) {
		t.Fatal("a should be hot after its loss, and b never")
	}
	if h.hot("a", at(hotFor)) || h.n.Load() != 0 {
		t.Fatalf("a still hot, or remembered, hotFor after its loss: %d remembered", h.n.Load())
	}
	for i := range hotDocsMax {
		h.mark(fmt.Sprint(i), t0)
	}
	h.mark("full", t0.Add(time.Millisecond))
	if h.hot("full", at(time.Millisecond)) || len(h.lost) != hotDocsMax {
		t.Fatalf("marked beyond the bound: %d remembered", len(h.lost))
	}
	h.mark("later", t0.Add(hotFor))
	if !h.hot("later", at(hotFor)) || len(h.lost) != 1 {
		t.Fatalf("expired documents not dropped for a new one: %d remembered", len(h.lost))
	}
}
