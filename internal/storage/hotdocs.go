package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// hotDocs remembers the documents whose compare-and-swap (Replace) was
// lost to a concurrent write within the last hotFor. Where writers queue
// for one document, an update by _id of it takes the row lock first
// (exec), in two round trips and one wait in the row's queue, instead of
// swapping, losing, and locking after all. A document not lost again for
// hotFor is swapped optimistically again; its next loss marks it anew.
// At most hotDocsMax documents are remembered, so memory stays bounded
// whatever the workload.
type hotDocs struct {
	n    atomic.Int32 // len(lost): Hot looks no further while nothing is hot
	mu   sync.RWMutex
	lost map[string]time.Time // cacheKey → the last lost swap
}

const (
	hotFor     = time.Second
	hotDocsMax = 1024
)

// mark notes a lost swap of the document k names at now.
func (h *hotDocs) mark(k string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = map[string]time.Time{}
	}
	if _, ok := h.lost[k]; !ok && len(h.lost) >= hotDocsMax {
		for old, at := range h.lost {
			if now.Sub(at) >= hotFor {
				delete(h.lost, old)
			}
		}
		if len(h.lost) >= hotDocsMax {
			return // as many hot documents as remembered: k swaps as usual
		}
	}
	h.lost[k] = now
	h.n.Store(int32(len(h.lost)))
}

// hot reports whether the document k names lost a swap within hotFor of
// now; an entry found expired is dropped.
func (h *hotDocs) hot(k string, now func() time.Time) bool {
	h.mu.RLock()
	at, ok := h.lost[k]
	h.mu.RUnlock()
	if !ok {
		return false
	}
	if now().Sub(at) < hotFor {
		return true
	}
	h.mu.Lock()
	if cur, ok := h.lost[k]; ok && cur.Equal(at) { // not marked again meanwhile
		delete(h.lost, k)
		h.n.Store(int32(len(h.lost)))
	}
	h.mu.Unlock()
	return false
}

// Hot reports whether the document with _id key lost a compare-and-swap
// to a concurrent write within the last second: an update of it should
// take its row lock first (WithRowLocked) rather than swap. While no
// document is hot it costs one atomic load.
func (s *Store) Hot(c *Collection, key []byte) bool {
	if s.hotDocs.n.Load() == 0 {
		return false
	}
	return s.hotDocs.hot(cacheKey(c, key), time.Now)
}
