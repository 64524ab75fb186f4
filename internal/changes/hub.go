package changes

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// Slot is the logical replication slot the Hub reads (storage implements
// it on a low-tier backend of the primary).
type Slot interface {
	// Peek streams the pgoutput messages of the changes from the slot's
	// position on, up to about n changes (whole transactions), to fn; fn
	// returning false stops reading.
	Peek(ctx context.Context, n int, fn func(data []byte) bool) error
	// Advance moves the slot's position forward to lsn.
	Advance(ctx context.Context, lsn uint64) error
	// Confirmed is the slot's position.
	Confirmed(ctx context.Context) (uint64, error)
	// Current is the end of the WAL written so far.
	Current(ctx context.Context) (uint64, error)
	// Flushed is the end of the WAL flushed so far: what a read of the
	// slot decodes up to.
	Flushed(ctx context.Context) (uint64, error)
	// Resolve names the collection of a data table.
	Resolve(ctx context.Context, tbl string) (Namespace, bool, error)
}

// ErrSlotLost: the slot is gone (a failover promoted a standby, which has
// no copy of it, or someone dropped it). Every stream's history is lost.
var ErrSlotLost = errors.New("changes: the replication slot of change streams is gone")

// ErrSlotBusy: another process is reading the slot (another tierdb on the
// same PostgreSQL); try again later.
var ErrSlotBusy = errors.New("changes: the replication slot of change streams is in use")

// Bounds of what the Hub holds, and its timing.
const (
	MaxBufferedChanges = 10000
	MaxBufferedBytes   = 64 << 20
	// MaxLagMessages bounds how far (in messages of the slot) a stream
	// that fell behind the buffer may trail the newest change read: the
	// slot keeps its history, and every read of the slot decodes it
	// again, so past that the stream's history is lost.
	MaxLagMessages = 60000
	// maxCatchUp bounds the changes one read of a lagging stream takes
	// (and a quarter of MaxBufferedBytes, their size).
	maxCatchUp = 1000
	// lagMarkEvery spaces the positions a read of the slot remembers, to
	// find where MaxLagMessages falls.
	lagMarkEvery = 1024
	// Retention is how long the slot keeps its history with no stream open.
	Retention = 10 * time.Minute
	// pollEvery spaces the Hub's reads of the slot.
	pollEvery = 100 * time.Millisecond
)

// Hub shares one slot among every change stream of the tierdb.
type Hub struct {
	slot Slot
	// admit waits for low-tier admission before each read of the slot.
	admit func(ctx context.Context) (func(), error)

	// maxChanges, maxBytes, maxLag: MaxBufferedChanges,
	// MaxBufferedBytes and MaxLagMessages (smaller in tests).
	maxChanges, maxBytes, maxLag int

	pollMu   sync.Mutex // one read of the slot at a time
	lastPoll time.Time
	known    map[string]Namespace
	// behind is how many messages the last read served before its first
	// new change: transactions the slot still holds but the hub has
	// scanned. The next read asks for that many more, or a transaction
	// of more rows than a read asks for, consumed but kept by the slot
	// (for resuming inside it), would be all it ever reads.
	behind int
	// readTo is the end of the flushed WAL before the last read of the
	// slot that got to the end of what the slot had: until the WAL
	// flushed moves past it, a read would find nothing new (and decode
	// the history the slot keeps again for nothing).
	readTo uint64

	mu    sync.Mutex
	buf   []Change
	bytes int
	// base is the slot's position, or where trim is moving it: no stream
	// may open before it.
	base    uint64
	scanned Position // every change up to here is in buf or was trimmed
	trimmed Position // the last change dropped from buf
	// since: every change committed at or after it is at or after base
	// (startAtOperationTime cannot go back further).
	since    time.Time
	streams  map[*Stream]struct{}
	lastOpen time.Time // when a stream was last open
}

// NewHub starts a hub on slot, whose position is read now.
func NewHub(ctx context.Context, slot Slot, admit func(context.Context) (func(), error)) (*Hub, error) {
	base, err := slot.Confirmed(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	start := Position{LSN: base}
	return &Hub{slot: slot, admit: admit, maxChanges: MaxBufferedChanges, maxBytes: MaxBufferedBytes, maxLag: MaxLagMessages, base: base, scanned: start, trimmed: start, since: now, streams: map[*Stream]struct{}{}, known: map[string]Namespace{}, lastOpen: now}, nil
}

// Stream is one change stream's position in the hub.
type Stream struct {
	hub   *Hub
	scope Scope
	pos   Position
	// ended: the stream was invalidated; nothing more comes.
	ended bool
	// lost: the slot moved past the stream (guarded by the hub's mu).
	lost bool
	// lagging: the stream is behind the buffer (it fell behind the others,
	// or resumed from history the buffer let go) and reads the slot on its
	// own until it reaches the buffer (guarded by the hub's mu).
	lagging bool
	// skip is how many messages of the slot came before the lagging
	// stream's position at its last read.
	skip int
	// from, when set, passes over the changes before that cluster time
	// (startAtOperationTime), until the first change at or after it.
	from *bson.Timestamp
}

// Open registers a stream starting after pos, or, when start is nil, at
// the current end of the WAL. A position the slot no longer holds is
// ChangeStreamHistoryLost.
func (h *Hub) Open(ctx context.Context, scope Scope, start *Position) (*Stream, error) {
	var pos Position
	if start != nil {
		pos = *start
	} else {
		cur, err := h.slot.Current(ctx)
		if err != nil {
			return nil, err
		}
		pos = Position{LSN: cur, Index: hwm}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if pos.needs() < h.base && start == nil {
		// The slot moved on since the end of the WAL was read: a new
		// stream starts where the slot is now.
		pos = Position{LSN: h.base, Index: hwm}
	}
	if pos.needs() < h.base {
		return nil, mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog (tierdb's replication slot has moved past it)")
	}
	// The slot still has this history but the buffer let it go: the
	// stream reads it from the slot on its own.
	s := &Stream{hub: h, scope: scope, pos: pos, lagging: pos.Less(h.trimmed)}
	h.streams[s] = struct{}{}
	h.lastOpen = time.Now()
	return s, nil
}

// Close unregisters the stream, so the slot may move past its position.
func (s *Stream) Close() {
	h := s.hub
	h.mu.Lock()
	delete(h.streams, s)
	h.lastOpen = time.Now()
	h.mu.Unlock()
}

// Hub is the stream's hub.
func (s *Stream) Hub() *Hub { return s.hub }

// Position is where the stream is: after every change it has been given
// or passed over.
func (s *Stream) Position() Position { return s.pos }

// Next returns up to n changes of the stream's scope after its position
// (reading the slot if it has none buffered), and whether the last one
// invalidates the stream. It never waits beyond one read of the slot.
func (s *Stream) Next(ctx context.Context, n int) ([]Change, error) {
	if s.ended {
		return nil, nil
	}
	if s.isLagging() {
		return s.catchUp(ctx, n)
	}
	out, err := s.take(n)
	if len(out) > 0 || err != nil {
		return out, err
	}
	if err := s.hub.poll(ctx); err != nil {
		return nil, err
	}
	return s.take(n)
}

func (s *Stream) take(n int) ([]Change, error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.lost {
		return nil, errLost
	}
	h.lastOpen = time.Now()
	if s.lagging {
		return nil, nil // fell behind meanwhile: the next read catches up
	}
	var out []Change
	for i := range h.buf {
		c := &h.buf[i]
		if !s.pos.Less(c.Pos) {
			continue
		}
		if n > 0 && len(out) >= n {
			return out, nil
		}
		s.pos = c.Pos
		if s.wants(c) {
			out = append(out, *c)
			if s.scope.Invalidates(c) {
				s.ended = true
				return out, nil
			}
		}
	}
	if s.pos.Less(h.scanned) {
		s.pos = h.scanned
	}
	return out, nil
}

// poll reads new changes from the slot into the buffer (at most every
// pollEvery), after trimming what every open stream has consumed.
func (h *Hub) poll(ctx context.Context) error {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	if time.Since(h.lastPoll) < pollEvery {
		return nil
	}
	defer func() { h.lastPoll = time.Now() }()
	done, err := h.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := h.checkSlot(ctx); err != nil {
		return err
	}
	if err := h.trim(ctx); err != nil {
		return busyIsNil(err)
	}
	if h.leaveBehind() {
		if err := h.trim(ctx); err != nil {
			return busyIsNil(err)
		}
	}
	h.mu.Lock()
	scanned, room := h.scanned, h.maxChanges-len(h.buf)
	roomBytes := h.maxBytes - h.bytes
	want := h.behind + len(h.buf) + 1000
	h.mu.Unlock()
	if room <= 0 || roomBytes <= 0 {
		return nil
	}
	flushed, err := h.slot.Flushed(ctx)
	if err != nil {
		return err
	}
	if flushed != 0 && flushed == h.readTo {
		return nil // nothing written since the slot was read to its end
	}
	dec := NewDecoder(func(tbl string) (Namespace, bool, error) { return h.slot.Resolve(ctx, tbl) })
	dec.known = h.known
	var fresh []Change
	freshBytes := 0
	var decodeErr error
	msgs := 0
	// whole is the end of the last transaction that made no change (an
	// index build, catalog rows): the scan has passed it, and so may the
	// slot, or a read would decode it again and, when it has more rows
	// than a read asks for, never get past it.
	var whole Position
	var changed txnChanges
	behind := 0
	var marks lagMarks
	stopped := false
	err = h.slot.Peek(ctx, want, func(data []byte) bool {
		if len(fresh) == 0 {
			marks.note(msgs)
		}
		if msgs++; msgs%256 == 0 {
			runtime.Gosched() // decoding is background work: let requests run
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
		commit, isCommit := m.(*pglogrepl.CommitMessage)
		if isCommit {
			marks.last = Position{LSN: uint64(commit.CommitLSN), Index: hwm}
			if !changed.any {
				whole = marks.last
			}
		}
		for _, c := range taken {
			if !scanned.Less(c.Pos) {
				continue
			}
			if len(fresh) >= room || freshBytes+c.size() > roomBytes && len(fresh) > 0 {
				stopped = true
				return false
			}
			freshBytes += c.size()
			fresh = append(fresh, c)
		}
		if isCommit && len(fresh) == 0 {
			behind = msgs
		}
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return busyIsNil(err)
	}
	h.behind = behind
	if h.readTo = 0; !stopped && msgs < want {
		h.readTo = flushed // the read got to the end of the slot
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loseLagging(marks, behind, nil)
	h.buf = append(h.buf, fresh...)
	h.bytes += freshBytes
	if len(fresh) > 0 {
		h.scanned = fresh[len(fresh)-1].Pos
	}
	if h.scanned.Less(whole) {
		h.scanned = whole
	}
	return nil
}

func busyIsNil(err error) error {
	if errors.Is(err, ErrSlotBusy) {
		return nil
	}
	return err
}

// trim drops the changes every open stream has passed and moves the slot
// to the oldest open stream's position; with no stream open for
// Retention, to the end of the WAL.
func (h *Hub) trim(ctx context.Context) error {
	h.mu.Lock()
	var target uint64
	if len(h.streams) == 0 {
		if time.Since(h.lastOpen) < Retention {
			h.mu.Unlock()
			return nil
		}
		h.mu.Unlock()
		cur, err := h.slot.Current(ctx)
		if err != nil {
			return err
		}
		h.mu.Lock()
		if len(h.streams) > 0 {
			h.mu.Unlock()
			return nil
		}
		h.buf, h.bytes = nil, 0
		if h.scanned.Less(Position{LSN: cur, Index: hwm}) {
			h.scanned = Position{LSN: cur, Index: hwm}
		}
		h.trimmed = h.scanned
		target = cur
	} else {
		// The buffer keeps what the streams reading it still need; the
		// slot, what every stream whose history is not lost needs.
		end := Position{LSN: ^uint64(0), Index: hwm}
		keep, hold := end, end
		for s := range h.streams {
			if s.lost {
				continue
			}
			if s.pos.Less(hold) {
				hold = s.pos
			}
			if !s.lagging && s.pos.Less(keep) {
				keep = s.pos
			}
		}
		i := 0
		for i < len(h.buf) && !keep.Less(h.buf[i].Pos) {
			h.bytes -= h.buf[i].size()
			h.trimmed = h.buf[i].Pos
			i++
		}
		h.buf = append([]Change(nil), h.buf[i:]...)
		// Transactions committed before every stream's position are
		// needed by none (one committed at target is sent again, and
		// skipped by position).
		if hold == end {
			h.mu.Unlock()
			return nil
		}
		target = hold.needs()
	}
	if target <= h.base {
		h.mu.Unlock()
		return nil
	}
	// Raised before the slot moves, so that no stream opens, meanwhile,
	// at a position the slot is leaving behind.
	was, wasSince := h.base, h.since
	h.base = target
	// Every transaction before target committed before now (target is
	// at most the end of the WAL read so far).
	h.since = time.Now()
	h.mu.Unlock()
	if err := h.slot.Advance(ctx, target); err != nil {
		h.mu.Lock()
		h.base, h.since = was, wasSince
		h.mu.Unlock()
		return err
	}
	return nil
}

// Maintain trims the buffer and moves the slot (see trim) without reading
// changes; for when no stream has asked for a while.
func (h *Hub) Maintain(ctx context.Context) error {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	done, err := h.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	return h.trim(ctx)
}

// PollEvery is how long a waiting stream sleeps between reads.
func PollEvery() time.Duration { return pollEvery }
