package changes

import (
	"context"
	"runtime"
	"time"

	"github.com/jackc/pglogrepl"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Streams that fall behind. The buffer holds the changes after the
// position of the slowest stream reading it; when it is full, the streams
// holding its older half are left behind (they become lagging) rather than
// every stream waiting for them. A lagging stream reads the slot on its
// own, a bounded batch at a time, until it reaches the buffer again; the
// slot keeps its history meanwhile, up to MaxLagMessages behind the newest
// change read, past which its history is lost (ChangeStreamHistoryLost):
// every read of the slot decodes what it keeps again.

var errLost = mongoerr.New(mongoerr.ChangeStreamHistoryLost, "the change stream's history is lost: it fell too far behind the newest changes (or another tierdb moved the shared replication slot past it); open a new stream")

// checkSlot looks whether another tierdb on the same PostgreSQL moved the
// shared slot past streams of ours (their history is gone), so that
// trimming never tries to move it back.
func (h *Hub) checkSlot(ctx context.Context) error {
	conf, err := h.slot.Confirmed(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if conf > h.base {
		h.base, h.since = conf, time.Now()
		for s := range h.streams {
			if s.pos.needs() < conf {
				s.lost = true
			}
		}
	}
	return nil
}

// leaveBehind, when the buffer is full, makes the streams still before the
// middle of it lagging, so that trim frees half of it; it reports whether
// it did.
func (h *Hub) leaveBehind() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == 0 || len(h.buf) < h.maxChanges && h.bytes < h.maxBytes {
		return false
	}
	cut := h.buf[len(h.buf)/2].Pos
	left := false
	for s := range h.streams {
		if !s.lagging && s.pos.Less(cut) {
			s.lagging, left = true, true
		}
	}
	return left
}

// lagMarks remembers, while a read of the slot has not yet come to what it
// is after, the last commit before every lagMarkEvery-th message: where
// the read was maxLag messages before that point.
type lagMarks struct {
	marks []Position
	last  Position // the last commit read
}

// note is called before message msgs (counted from 0) is read.
func (m *lagMarks) note(msgs int) {
	if msgs%lagMarkEvery == 0 {
		m.marks = append(m.marks, m.last)
	}
}

// loseLagging ends the history of the lagging streams (but keep) more than
// maxLag messages before the point a read of the slot came to after
// behind messages, so that the slot may move on (h.mu held).
func (h *Hub) loseLagging(m lagMarks, behind int, keep *Stream) {
	if behind <= h.maxLag || len(m.marks) == 0 {
		return
	}
	cut := m.marks[min((behind-h.maxLag)/lagMarkEvery, len(m.marks)-1)]
	for s := range h.streams {
		if s != keep && s.lagging && s.pos.Less(cut) {
			s.lost = true
		}
	}
}

func (s *Stream) isLagging() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.lagging && !s.lost
}

// txnChanges follows whether the transaction being read made any change
// (one without is passed over whole).
type txnChanges struct{ any bool }

func (t *txnChanges) see(m pglogrepl.Message, taken []Change) {
	if _, begin := m.(*pglogrepl.BeginMessage); begin {
		t.any = false
	}
	if len(taken) > 0 {
		t.any = true
	}
}

// BeforeTime reports whether the stream still passes over the changes
// before its startAtOperationTime: its position then makes no resume
// token (resuming from it would not pass over them); a driver resumes with
// the time instead.
func (s *Stream) BeforeTime() bool { return s.from != nil }

// wants reports whether the stream returns c (otherwise it passes over it).
func (s *Stream) wants(c *Change) bool {
	if !s.scope.Matches(c) {
		return false
	}
	if s.from != nil {
		if ct := clusterTime(c); ct.Before(*s.from) {
			return false
		}
		s.from = nil // from here on, in the order of the slot
	}
	return true
}

// catchUp is Next for a lagging stream: it reads its changes from the
// slot itself, up to maxCatchUp at a time, and joins the buffer again once
// its position reaches it.
func (s *Stream) catchUp(ctx context.Context, n int) ([]Change, error) {
	h := s.hub
	if n <= 0 || n > maxCatchUp {
		n = maxCatchUp
	}
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	done, err := h.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := h.checkSlot(ctx); err != nil {
		return nil, err
	}
	if err := h.trim(ctx); err != nil {
		return nil, busyIsNil(err)
	}
	h.mu.Lock()
	if s.lost {
		h.mu.Unlock()
		return nil, errLost
	}
	h.lastOpen = time.Now()
	from, want := s.pos, s.skip+4*n+1000
	h.mu.Unlock()
	dec := NewDecoder(func(tbl string) (Namespace, bool, error) { return h.slot.Resolve(ctx, tbl) })
	dec.known = h.known
	pos := from
	wasFrom := s.from // wants clears it: restored if the read fails
	var out []Change
	outBytes := 0
	var decodeErr error
	// first: the messages before the first change after the stream's
	// position; upto: before its new position.
	msgs, first, upto := 0, -1, -1
	var marks lagMarks
	var changed txnChanges
	err = h.slot.Peek(ctx, want, func(data []byte) bool {
		if first < 0 {
			marks.note(msgs)
		}
		if msgs++; msgs%256 == 0 {
			runtime.Gosched()
		}
		m, err := pglogrepl.Parse(data)
		if err != nil {
			decodeErr = err
			return false
		}
		if decodeErr = dec.Apply(m); decodeErr != nil {
			return false
		}
		taken := dec.Take()
		changed.see(m, taken)
		for i := range taken {
			c := &taken[i]
			if !pos.Less(c.Pos) {
				continue
			}
			if first < 0 {
				first = msgs
			}
			if len(out) >= n || len(out) > 0 && outBytes+c.size() > h.maxBytes/4 {
				return false
			}
			pos, upto = c.Pos, msgs
			if s.wants(c) {
				outBytes += c.size()
				out = append(out, *c)
				if s.scope.Invalidates(c) {
					s.ended = true
					return false
				}
			}
		}
		if commit, ok := m.(*pglogrepl.CommitMessage); ok {
			marks.last = Position{LSN: uint64(commit.CommitLSN), Index: hwm}
			// A transaction without changes is passed over.
			if !changed.any && pos.Less(marks.last) {
				pos, upto = marks.last, msgs
			}
		}
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		s.from, s.ended = wasFrom, false
		return nil, busyIsNil(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.lost {
		return nil, errLost
	}
	if first >= 0 {
		// Streams lagging further behind than maxLag cost this one
		// (every read decodes from the slowest): they lose their history.
		h.loseLagging(marks, first, s)
	}
	switch {
	case upto >= 0:
		s.skip = upto
	case msgs >= want:
		s.skip = 2 * msgs // nothing new within what was asked: ask for more
	}
	s.pos = pos
	if !s.pos.Less(h.trimmed) {
		s.lagging = false
	}
	return out, nil
}

// OpenAt registers a stream returning the changes at or after cluster time
// t (startAtOperationTime). History the slot no longer holds is
// ChangeStreamHistoryLost.
func (h *Hub) OpenAt(ctx context.Context, scope Scope, t bson.Timestamp) (*Stream, error) {
	at := time.Unix(int64(t.T), 0)
	if at.After(time.Now()) {
		// Every change at or after t is yet to be written.
		s, err := h.Open(ctx, scope, nil)
		if err == nil {
			s.from = &t
		}
		return s, err
	}
	h.mu.Lock()
	base, since := h.base, h.since
	h.mu.Unlock()
	if at.Before(since.Truncate(time.Second)) {
		return nil, mongoerr.Newf(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog: tierdb keeps the changes committed since %s (UTC)", since.UTC().Format(time.RFC3339))
	}
	// From the start of the slot's history: the transactions committed at
	// base or later.
	start := Position{LSN: base - 1, Index: hwm}
	s, err := h.Open(ctx, scope, &start)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	s.from = &t
	s.lagging = true
	h.mu.Unlock()
	return s, nil
}

// Stats is what the hub holds, for serverStatus.
type Stats struct {
	Streams, Lagging, Lost int
	Buffered, Bytes        int
}

// Stats counts the open streams and what the buffer holds.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Streams: len(h.streams), Buffered: len(h.buf), Bytes: h.bytes}
	for s := range h.streams {
		switch {
		case s.lost:
			st.Lost++
		case s.lagging:
			st.Lagging++
		}
	}
	return st
}
