package repl

import (
	"sort"
	"time"
)

// sample says: every write acknowledged before at lies before position lsn
// in the primary's WAL.
type sample struct {
	at  time.Time
	lsn uint64
}

// history is a ring of the primary's recent samples, oldest first, with
// nondecreasing positions.
type history struct {
	buf   []sample
	start int
	n     int
}

func newHistory(size int) *history { return &history{buf: make([]sample, size)} }

func (h *history) add(s sample) {
	if h.n > 0 {
		last := h.at(h.n - 1)
		if s.lsn < last.lsn { // a new primary's positions are not comparable
			h.n = 0
		}
	}
	if h.n == len(h.buf) {
		h.start = (h.start + 1) % len(h.buf)
		h.n--
	}
	h.buf[(h.start+h.n)%len(h.buf)] = s
	h.n++
}

func (h *history) at(i int) sample { return h.buf[(h.start+i)%len(h.buf)] }

// last is the newest sample.
func (h *history) last() (sample, bool) {
	if h.n == 0 {
		return sample{}, false
	}
	return h.at(h.n - 1), true
}

// freshAsOf returns the latest time as of which a node that has applied the
// WAL up to applied shows every acknowledged write, and false when applied
// is older than every sample kept.
func (h *history) freshAsOf(applied uint64) (time.Time, bool) {
	// The first sample beyond applied; the one before it is covered.
	i := sort.Search(h.n, func(i int) bool { return h.at(i).lsn > applied })
	if i == 0 {
		return time.Time{}, false
	}
	return h.at(i - 1).at, true
}
