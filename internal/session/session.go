package session

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// ID identifies a logical session: the driver's lsid and the user that
// owns it. A user cannot use another user's session.
type ID struct {
	UUID string // the 16 bytes of lsid.id
	User string // "db.name", or "" without authentication
}

// ParseLSID reads the lsid field of a command: {id: <UUID>, uid: ...}.
func ParseLSID(v any) (string, error) {
	d, ok := v.(bson.D)
	if !ok {
		return "", mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'lsid' is the wrong type, expected type 'object'")
	}
	for _, e := range d {
		if e.Key != "id" {
			continue
		}
		b, ok := e.Value.(bson.Binary)
		if !ok || b.Subtype != bson.TypeBinaryUUID {
			return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field 'lsid.id' is the wrong type, expected a UUID (binary subtype 4)")
		}
		if len(b.Data) != 16 {
			return "", mongoerr.Newf(mongoerr.BadValue, "lsid.id must be a 16-byte UUID, got %d bytes", len(b.Data))
		}
		return string(b.Data), nil
	}
	return "", mongoerr.New(mongoerr.BadValue, "BSON field 'lsid.id' is missing but a required field")
}

// TxnState is where a session's latest transaction stands.
type TxnState int

const (
	// None: the session has no transaction with its txnNumber (a retryable
	// write used it, or nothing has yet).
	None TxnState = iota
	Active
	Committed
	Aborted
)

// Resource is what an active transaction holds. Abort gives it back
// without committing; it must be safe to call more than once.
type Resource interface {
	Abort()
}

// Session is one logical session. Its exported fields belong to whoever
// holds its turn (Acquire until Release).
type Session struct {
	ID ID
	// TxnNumber is the highest txnNumber the session has started a
	// transaction with; State is that transaction's.
	TxnNumber int64
	State     TxnState
	// Txn is what the active transaction holds; nil unless State is Active.
	Txn Resource
	// Deadline is when the active transaction's lifetime ends; Started,
	// when it began.
	Deadline, Started time.Time
	// Expired says the last transaction was aborted by its lifetime limit.
	Expired bool

	turn chan struct{} // holds a token while a command of the session runs
	// Guarded by the registry's mu: when the session was last used, the
	// running command's cancel, the active transaction's deadline (zero
	// when none) and whether the session ended under a running command.
	lastUse     time.Time
	cancel      context.CancelFunc
	activeUntil time.Time
	doomed      bool
}

// Abort ends the active transaction, if any, without committing.
func (s *Session) Abort() {
	if s.State == Active {
		s.Txn.Abort()
		s.Txn = nil
		s.State = Aborted
	}
}

// Registry holds the sessions of this tierdb.
type Registry struct {
	now      func() time.Time
	idle     time.Duration
	lifetime time.Duration

	mu       sync.Mutex
	sessions map[ID]*Session
}

// NewRegistry returns an empty registry: sessions are forgotten after idle
// without use, transactions aborted lifetime after they start.
func NewRegistry(now func() time.Time, idle, lifetime time.Duration) *Registry {
	return &Registry{now: now, idle: idle, lifetime: lifetime, sessions: map[ID]*Session{}}
}

// Lifetime is the transaction lifetime limit.
func (r *Registry) Lifetime() time.Duration { return r.lifetime }

// Idle is the session timeout.
func (r *Registry) Idle() time.Duration { return r.idle }

// Acquire returns session id, created if new, once it is this caller's
// turn: a session runs one command at a time. cancel ends the command if
// the transaction's lifetime runs out meanwhile. Release must follow.
func (r *Registry) Acquire(ctx context.Context, id ID, cancel context.CancelFunc) (*Session, error) {
	r.mu.Lock()
	s := r.sessions[id]
	if s == nil {
		s = &Session{ID: id, turn: make(chan struct{}, 1)}
		r.sessions[id] = s
	}
	s.lastUse = r.now()
	r.mu.Unlock()
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.mu.Lock()
	s.cancel = cancel
	r.mu.Unlock()
	s.expireIfDue(r.now())
	return s, nil
}

// Release ends the caller's turn.
func (r *Registry) Release(s *Session) {
	s.expireIfDue(r.now())
	r.mu.Lock()
	doomed := s.doomed
	r.mu.Unlock()
	if doomed {
		s.Abort()
	}
	r.mu.Lock()
	s.cancel = nil
	s.lastUse = r.now()
	s.activeUntil = time.Time{}
	if s.State == Active {
		s.activeUntil = s.Deadline
	}
	r.mu.Unlock()
	<-s.turn
}

// Supersede aborts session id's open transaction when a statement with a
// newer txnNumber arrives outside it (a retryable write): as in MongoDB, a
// newer number ends the older transaction rather than waiting for it.
func (r *Registry) Supersede(ctx context.Context, id ID, txnNumber int64) error {
	r.mu.Lock()
	_, known := r.sessions[id]
	r.mu.Unlock()
	if !known {
		return nil
	}
	s, err := r.Acquire(ctx, id, nil)
	if err != nil {
		return err
	}
	if s.State == Active && s.TxnNumber < txnNumber {
		s.Abort()
	}
	r.Release(s)
	return nil
}

// Start records that s began transaction txnNumber, holding res.
func (r *Registry) Start(s *Session, txnNumber int64, res Resource) {
	s.TxnNumber, s.State, s.Txn, s.Expired = txnNumber, Active, res, false
	s.Started = r.now()
	s.Deadline = s.Started.Add(r.lifetime)
}

// IdleTxn is a session whose transaction is open between its statements
// (MongoDB's idle session).
type IdleTxn struct {
	ID                ID
	TxnNumber         int64
	Started, Deadline time.Time
	// IdleSince is when its last statement ended.
	IdleSince time.Time
}

// IdleTransactions lists the sessions with a transaction open and no
// command running, in no particular order. A session whose command is
// running is not waited for.
func (r *Registry) IdleTransactions() []IdleTxn {
	r.mu.Lock()
	all := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	var out []IdleTxn
	for _, s := range all {
		select {
		case s.turn <- struct{}{}: // no command runs: its fields may be read
		default:
			continue
		}
		if s.State == Active && r.now().Before(s.Deadline) {
			r.mu.Lock()
			since := s.lastUse
			r.mu.Unlock()
			out = append(out, IdleTxn{ID: s.ID, TxnNumber: s.TxnNumber, Started: s.Started, Deadline: s.Deadline, IdleSince: since})
		}
		<-s.turn
	}
	return out
}

func (s *Session) expireIfDue(now time.Time) {
	if s.State == Active && !now.Before(s.Deadline) {
		s.Abort()
		s.Expired = true
	}
}

// End forgets the sessions ids and aborts their transactions; a session
// whose command is running has that command cancelled and is aborted when
// it ends.
func (r *Registry) End(ids []ID) {
	for _, id := range ids {
		r.mu.Lock()
		s := r.sessions[id]
		delete(r.sessions, id)
		r.mu.Unlock()
		if s != nil {
			r.abortWhenFree(s)
		}
	}
}

// EndMatching ends every session whose user match accepts.
func (r *Registry) EndMatching(match func(ID) bool) {
	r.mu.Lock()
	var ids []ID
	for id := range r.sessions {
		if match(id) {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	r.End(ids)
}

// Touch marks sessions as used now (refreshSessions).
func (r *Registry) Touch(ids []ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if s := r.sessions[id]; s != nil {
			s.lastUse = r.now()
		}
	}
}

// abortWhenFree aborts s's transaction now if no command of s runs, else
// cancels that command and leaves the abort to its Release.
func (r *Registry) abortWhenFree(s *Session) {
	select {
	case s.turn <- struct{}{}:
		s.Abort()
		<-s.turn
	default:
		r.mu.Lock()
		s.doomed = true
		if s.cancel != nil {
			s.cancel()
		}
		r.mu.Unlock()
	}
}

// Reap aborts transactions past their lifetime and forgets sessions idle
// for longer than the session timeout. It is called periodically.
func (r *Registry) Reap() {
	now := r.now()
	r.mu.Lock()
	var expired, idle []*Session
	for id, s := range r.sessions {
		if now.Sub(s.lastUse) > r.idle {
			delete(r.sessions, id)
			idle = append(idle, s)
		} else {
			expired = append(expired, s)
		}
	}
	r.mu.Unlock()
	for _, s := range idle {
		r.abortWhenFree(s)
	}
	for _, s := range expired {
		select {
		case s.turn <- struct{}{}:
			s.expireIfDue(now)
			<-s.turn
		default:
			// A command of s is running: it expires at Release, and a
			// statement that outlives the limit is cancelled.
			r.mu.Lock()
			if s.cancel != nil && !s.activeUntil.IsZero() && !now.Before(s.activeUntil) {
				s.cancel()
			}
			r.mu.Unlock()
		}
	}
}

// Len is how many sessions the registry holds.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}
