package commands

import (
	"bytes"
	"context"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/session"
	"tierdb/internal/storage"
)

// sessionArgs are the logical-session fields of a command.
type sessionArgs struct {
	id           *session.ID // nil without lsid
	txnNumber    int64
	hasTxnNumber bool
	// autocommit:false marks every statement of a transaction;
	// startTransaction its first.
	inTxn    bool
	startTxn bool
}

// parseSessionArgs reads lsid, txnNumber, autocommit and startTransaction.
func parseSessionArgs(req *Request) (sessionArgs, error) {
	var sa sessionArgs
	if v, ok := lookup(req.Cmd, "lsid"); ok {
		uuid, err := session.ParseLSID(v)
		if err != nil {
			return sa, err
		}
		sa.id = &session.ID{UUID: uuid, User: sessionUser(req.Session)}
	}
	if v, ok := lookup(req.Cmd, "txnNumber"); ok {
		n, isLong := v.(int64)
		if !isLong {
			return sa, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'txnNumber' is the wrong type, expected type 'long'")
		}
		if n < 0 {
			return sa, mongoerr.Newf(mongoerr.BadValue, "txnNumber must be non-negative, got %d", n)
		}
		sa.txnNumber, sa.hasTxnNumber = n, true
	}
	if v, ok := lookup(req.Cmd, "autocommit"); ok {
		if b, isBool := v.(bool); !isBool || b {
			return sa, mongoerr.New(mongoerr.InvalidOptions, "autocommit must be false: it is only given, as false, with the statements of a transaction")
		}
		sa.inTxn = true
	}
	if v, ok := lookup(req.Cmd, "startTransaction"); ok {
		if b, isBool := v.(bool); !isBool || !b {
			return sa, mongoerr.New(mongoerr.InvalidOptions, "startTransaction must be true when given")
		}
		if !sa.inTxn {
			return sa, mongoerr.New(mongoerr.InvalidOptions, "startTransaction requires autocommit: false")
		}
		sa.startTxn = true
	}
	switch {
	case sa.hasTxnNumber && sa.id == nil:
		return sa, mongoerr.New(mongoerr.InvalidOptions, "txnNumber requires a session (lsid)")
	case sa.inTxn && !sa.hasTxnNumber:
		return sa, mongoerr.New(mongoerr.InvalidOptions, "a transaction statement requires txnNumber")
	}
	return sa, nil
}

func sessionUser(s *Session) string {
	if s == nil || s.User == nil {
		return ""
	}
	return s.User.User.Name.String()
}

func (sa sessionArgs) key() storage.SessionKey {
	return storage.SessionKey{LSID: []byte(sa.id.UUID), User: sa.id.User}
}

// txnCommands may run inside a transaction (MongoDB's list, less what
// tierdb does not have).
var txnCommands = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "aggregate": true,
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
	"commitTransaction": true, "abortTransaction": true,
}

// retryableWrites are the commands a driver may retry with the same
// txnNumber; each runs exactly once per (lsid, txnNumber).
var retryableWrites = map[string]bool{"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true}

// checkSessionArgs refuses session fields the command cannot take.
func checkSessionArgs(req *Request, sa sessionArgs) error {
	switch {
	case sa.inTxn && !txnCommands[req.Name]:
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTxn, "Cannot run '%s' in a multi-document transaction.", req.Name)
	case !sa.inTxn && (req.Name == "commitTransaction" || req.Name == "abortTransaction"):
		return mongoerr.Newf(mongoerr.InvalidOptions, "%s requires lsid, txnNumber and autocommit: false", req.Name)
	case sa.hasTxnNumber && !sa.inTxn && !retryableWrites[req.Name]:
		return mongoerr.Newf(mongoerr.TxnNumberNotAllowed, "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and %s is not a retryable write command.", req.Name)
	}
	if sa.inTxn {
		if _, ok := lookup(req.Cmd, "writeConcern"); ok && req.Name != "commitTransaction" && req.Name != "abortTransaction" {
			return mongoerr.New(mongoerr.InvalidOptions, "Cannot set write concern after starting a transaction.")
		}
		if err := checkTxnReadConcern(req.Cmd, sa.startTxn); err != nil {
			return err
		}
		if p, err := getDoc(req.Cmd, "$readPreference"); err != nil {
			return err
		} else if mode, _ := getString(p, "mode", "primary"); mode != "primary" {
			return mongoerr.Newf(mongoerr.InvalidOptions, "read preference in a transaction must be primary, not %s", mode)
		}
	}
	return nil
}

// checkTxnReadConcern: a transaction takes its read concern on its first
// statement only; every level MongoDB allows there gets a snapshot here
// (REPEATABLE READ), at least as strong as local and majority ask.
func checkTxnReadConcern(cmd bson.D, first bool) error {
	rc, err := getDoc(cmd, "readConcern")
	if err != nil || rc == nil {
		return err
	}
	if !first {
		return mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	for _, e := range rc {
		switch e.Key {
		case "level":
			switch e.Value {
			case "local", "majority", "snapshot":
			default:
				return mongoerr.Newf(mongoerr.InvalidOptions, "read concern level %v is not supported in a transaction", e.Value)
			}
		case "afterClusterTime":
			// tierdb has one primary history: everything acknowledged
			// before this statement is in its snapshot.
		default:
			return mongoerr.Newf(mongoerr.InvalidOptions, "unsupported readConcern field in a transaction: %s", e.Key)
		}
	}
	return nil
}

// txnResource is what an active transaction holds: its PostgreSQL
// transaction (and so one backend of its tier's pool).
type txnResource struct {
	txn   *storage.Txn
	stats *txnStats
}

func (r txnResource) Abort() {
	r.txn.Rollback(context.Background())
	r.stats.aborted.Add(1)
}

// txnStats count transactions and retried writes (serverStatus, /metrics).
type txnStats struct {
	started, committed, aborted atomic.Int64
	// retried: retryable writes answered from their record.
	retried atomic.Int64
}

// status is serverStatus().transactions, in MongoDB's names.
func (st *txnStats) status() bson.D {
	started, committed, aborted := st.started.Load(), st.committed.Load(), st.aborted.Load()
	return bson.D{
		{Key: "retriedCommandsCount", Value: st.retried.Load()},
		{Key: "currentOpen", Value: started - committed - aborted},
		{Key: "totalStarted", Value: started},
		{Key: "totalCommitted", Value: committed},
		{Key: "totalAborted", Value: aborted},
	}
}

// inTransaction runs one statement of a multi-document transaction (seen
// by MongoDB's rules: the first statement starts it, commitTransaction and
// abortTransaction end it; any error or write error aborts it).
func (h *Handlers) inTransaction(ctx context.Context, req *Request, sa sessionArgs, run handlerFunc) (bson.D, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := h.sessions.Acquire(ctx, *sa.id, cancel)
	if err != nil {
		return nil, err
	}
	defer h.sessions.Release(s)
	if sa.txnNumber < s.TxnNumber {
		return nil, mongoerr.Newf(mongoerr.TransactionTooOld, "Cannot start transaction %d on session because a newer transaction %d has already started", sa.txnNumber, s.TxnNumber)
	}
	if sa.startTxn {
		if err := h.startTransaction(ctx, req, sa, s); err != nil {
			return nil, err
		}
	} else if err := h.txnContinues(ctx, req, sa, s); err != nil {
		return nil, err
	}
	switch req.Name {
	case "commitTransaction":
		return h.commitTransaction(ctx, req.on.Async, sa, s)
	case "abortTransaction":
		if s.State == session.Committed {
			return nil, mongoerr.New(mongoerr.TransactionCommitted, "Transaction has been committed")
		}
		s.Abort()
		return bson.D{}, nil
	}
	txn := s.Txn.(txnResource).txn
	req.on.Txn = txn // the statement runs in the session's transaction
	reply, err := run(ctx, req)
	req.on.Txn = nil
	if err == nil && txn.Failed() {
		err = mongoerr.New(mongoerr.NoSuchTransaction, "Transaction was aborted by an earlier failure")
	}
	if err == nil {
		err = writeConflictIn(reply)
	}
	if err != nil || hasWriteErrors(reply) {
		s.Abort()
		if me, _ := Map(err); err != nil && (me.Code == mongoerr.WriteConflict || me.Code == mongoerr.NoSuchTransaction) {
			return nil, me.WithLabel(mongoerr.LabelTransientTxn)
		}
	}
	return reply, err
}

// startTransaction begins transaction sa.txnNumber of s: a PostgreSQL
// transaction at REPEATABLE READ on a backend of the request's tier,
// which also claims the txnNumber durably (so a stale or reused number is
// refused after a restart too).
func (h *Handlers) startTransaction(ctx context.Context, req *Request, sa sessionArgs, s *session.Session) error {
	if sa.txnNumber == s.TxnNumber && s.State != session.None {
		return mongoerr.Newf(mongoerr.ConflictingOperationInProg, "transaction %d has already been started on this session", sa.txnNumber)
	}
	s.Abort() // a newer transaction ends the session's open one
	txn, prev, err := h.store.BeginRecorded(ctx, req.tier, sa.key(), sa.txnNumber)
	if err != nil {
		return err
	}
	if prev != nil {
		s.TxnNumber = prev.TxnNumber
		if prev.TxnNumber > sa.txnNumber {
			return mongoerr.Newf(mongoerr.TransactionTooOld, "Cannot start transaction %d on session because a newer transaction %d has already started", sa.txnNumber, prev.TxnNumber)
		}
		return mongoerr.Newf(mongoerr.ConflictingOperationInProg, "txnNumber %d has already been used on this session", sa.txnNumber)
	}
	h.sessions.Start(s, sa.txnNumber, txnResource{txn, &h.txnStats})
	h.txnStats.started.Add(1)
	return nil
}

// txnContinues checks that a later statement belongs to the session's
// transaction and that it is still open.
func (h *Handlers) txnContinues(ctx context.Context, req *Request, sa sessionArgs, s *session.Session) error {
	if sa.txnNumber > s.TxnNumber || s.State == session.None {
		// Unknown here: after a restart a commit may still be answered
		// from the durable record.
		if req.Name == "commitTransaction" {
			if rec, err := h.store.LoadRecord(ctx, req.tier, sa.key()); err != nil {
				return err
			} else if rec != nil && rec.TxnNumber == sa.txnNumber && rec.Reply != nil {
				s.TxnNumber, s.State = sa.txnNumber, session.Committed
				return nil
			}
		}
		return noSuchTxn(sa.txnNumber, "")
	}
	switch s.State {
	case session.Aborted:
		if s.Expired {
			return noSuchTxn(sa.txnNumber, " (aborted: it exceeded transactionLifetimeLimitSeconds)")
		}
		if req.Name == "abortTransaction" {
			return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction has been aborted")
		}
		return noSuchTxn(sa.txnNumber, " (it has been aborted)")
	case session.Committed:
		if req.Name != "commitTransaction" && req.Name != "abortTransaction" {
			return mongoerr.New(mongoerr.TransactionCommitted, "Transaction has been committed")
		}
	}
	return nil
}

func noSuchTxn(n int64, why string) error {
	return mongoerr.Newf(mongoerr.NoSuchTransaction, "Transaction with txnNumber %d is not in progress%s", n, why).WithLabel(mongoerr.LabelTransientTxn)
}

// committedReply is what the durable record of a committed transaction
// holds: {committedTransaction: true}.
var committedReply = func() []byte {
	b, err := bsonx.Marshal(bson.D{{Key: "committedTransaction", Value: true}})
	if err != nil {
		panic(err)
	}
	return b
}()

// commitTransaction commits the session's transaction together with its
// durable record; async is the write concern's j:false (see
// storage.On.Async). A commit retried after success answers ok again.
func (h *Handlers) commitTransaction(ctx context.Context, async bool, sa sessionArgs, s *session.Session) (bson.D, error) {
	if s.State == session.Committed {
		return bson.D{}, nil
	}
	txn := s.Txn.(txnResource).txn
	s.Txn, s.State = nil, session.Aborted
	err := txn.CommitRecorded(ctx, async, sa.key(), committedReply)
	if err == nil {
		h.txnStats.committed.Add(1)
		s.State = session.Committed
		return bson.D{}, nil
	}
	h.txnStats.aborted.Add(1) // or, for an unknown outcome, perhaps not
	me, _ := Map(err)
	switch {
	case me.Code == mongoerr.WriteConflict:
		return nil, me.WithLabel(mongoerr.LabelTransientTxn)
	case storage.IsCode(err, storage.ErrUnavailable) || storage.IsCode(err, storage.ErrCanceled) || storage.IsCode(err, storage.ErrDeadline):
		// The COMMIT may have reached PostgreSQL: the driver retries
		// commitTransaction, answered from the durable record.
		s.State = session.None
		return nil, me.WithLabel(mongoerr.LabelUnknownCommit)
	}
	return nil, err
}

// writeConflictIn returns a WriteConflict among reply's write errors: in a
// transaction it fails the whole command (with its label), as in MongoDB.
func writeConflictIn(reply bson.D) error {
	errs, _ := lookup(reply, "writeErrors")
	arr, _ := errs.(bson.A)
	for _, we := range arr {
		if d, ok := we.(bson.D); ok {
			if code, _ := lookup(d, "code"); code == int32(mongoerr.WriteConflict) {
				msg, _ := getString(d, "errmsg", "")
				return mongoerr.New(mongoerr.WriteConflict, msg)
			}
		}
	}
	return nil
}

func hasWriteErrors(reply bson.D) bool {
	_, ok := lookup(reply, "writeErrors")
	return ok
}

// retryableWrite runs a write with lsid and txnNumber exactly once: in one
// PostgreSQL transaction that commits the write together with the
// session's durable record of its reply, unless the record shows the
// session ran that txnNumber before (on this tierdb, another, or before a
// crash or failover): then the write is rolled back and the first reply
// answers the retry.
//
// The first attempt assumes the write's first statement succeeds as
// expected and sends it with the commit, in one round trip
// (storage.Txn.deferWrite); if PostgreSQL refuses it, nothing has
// committed and the write runs again the ordinary way, to find out what
// happened (a duplicate key, a lost compare-and-swap) and reply with it.
func (h *Handlers) retryableWrite(ctx context.Context, req *Request, sa sessionArgs, run handlerFunc) (bson.D, error) {
	// The session's open transaction, if older, would hold its record.
	if err := h.sessions.Supersede(ctx, *sa.id, sa.txnNumber); err != nil {
		return nil, err
	}
	deferFirst := true
	for conflicts := 0; ; {
		txn, err := h.store.BeginWrite(ctx, req.tier, sa.key(), sa.txnNumber, deferFirst)
		if err != nil {
			return nil, err
		}
		req.on.Txn = txn // the write runs in the transaction of its record
		reply, err := run(ctx, req)
		req.on.Txn = nil
		if txn.DeferredFailed() {
			txn.Rollback(context.WithoutCancel(ctx))
			deferFirst = false
			continue
		}
		if err == nil && txn.Failed() {
			err = mongoerr.New(mongoerr.WriteConflict, "the write's transaction was aborted")
		}
		var raw []byte
		if err == nil {
			raw, err = bsonx.Marshal(reply)
		}
		if err != nil {
			txn.Rollback(context.WithoutCancel(ctx))
			// A retry answers with the first reply, even where running
			// again failed (its collection was dropped since, say).
			if prev, lerr := txn.Settled(ctx); lerr == nil && prev != nil {
				h.txnStats.retried.Add(1)
				return retriedReply(prev, sa.txnNumber)
			}
			if storage.IsCode(err, storage.ErrWriteConflict) && conflicts < 3 {
				conflicts++
				continue // a deadlock between two writers: PostgreSQL chose us
			}
			return nil, err
		}
		prev, err := txn.CommitWrite(ctx, req.on.Async, raw)
		if txn.DeferredFailed() {
			deferFirst = false
			continue
		}
		if err != nil {
			return nil, err
		}
		if prev != nil {
			h.txnStats.retried.Add(1)
			return retriedReply(prev, sa.txnNumber)
		}
		return reply, nil
	}
}

// retriedReply is the answer to a write whose txnNumber the session has
// already used: the first reply, or TransactionTooOld for an older number.
func retriedReply(prev *storage.Record, n int64) (bson.D, error) {
	switch {
	case prev.TxnNumber > n:
		return nil, mongoerr.Newf(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session because a newer retryable write with txnNumber %d has already started", n, prev.TxnNumber)
	case prev.Reply == nil || bytes.Equal(prev.Reply, committedReply):
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "txnNumber %d of this session belongs to a transaction, not a retryable write", n)
	}
	return bsonx.Decode(prev.Reply)
}
