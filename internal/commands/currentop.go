package commands

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The commands over the requests in process (ops.go): currentOp, the
// $currentOp stage and killOp.

// opsView says what currentOps lists: everyone's operations with
// allUsers (which needs inprog), else the caller's own; with idle, the
// connections without a request in process too (active: false; whose
// they are is not known, so with authentication on only with allUsers,
// and without it every connection is the caller's); with idleSessions, the
// sessions whose transaction is open between statements; with idleCursors,
// the cursors no getMore is using (idlecursors.go); matching filter. With
// truncate, commands over 1 KB are shown truncated (the currentOp
// command's way); otherwise whole, within BSON's document limit.
type opsView struct {
	allUsers, idle, idleSessions, idleCursors, truncate bool
	filter                                              *query.Filter
}

// currentOps lists the operations of v.
func (h *Handlers) currentOps(req *Request, v opsView) (bson.A, error) {
	allUsers, filter := v.allUsers, v.filter
	if allUsers && !h.mayCluster(req.Session, auth.Actions(auth.ActInprog)) {
		return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized on admin to execute command { currentOp: 1 }: allUsers needs the inprog privilege")
	}
	now := time.Now()
	var docs []bson.D
	busy := map[int64]bool{}
	// Whole commands are shown while together they fit in one document's
	// worth of bytes, then truncated: a listing's memory stays bounded
	// whatever the operations carry.
	budget := maxWholeCommandBytes
	for _, op := range h.live.snapshot() {
		if op.hasConn {
			busy[op.connID] = true
		}
		if allUsers || op.ownedBy(req.Session) {
			limit := maxOpCommandBytes
			if !v.truncate {
				limit = max(budget, maxOpCommandBytes)
			}
			d, shown := op.doc(now, limit)
			docs = append(docs, d)
			budget -= shown
		}
	}
	if v.idleSessions {
		docs = append(docs, h.idleSessionDocs(req, allUsers, now)...)
	}
	if v.idleCursors {
		docs = append(docs, h.idleCursorDocs(req, allUsers)...)
	}
	if v.idle && !allUsers && h.opts.Auth != nil && h.opts.Auth.Required() {
		// An idle connection's user is not known here.
		return nil, mongoerr.New(mongoerr.NotImplemented, "tierdb lists idle connections only with allUsers: true (or without $ownOps) while authentication is on")
	}
	if v.idle && h.opts.Clients != nil {
		clients := h.opts.Clients()
		sort.Slice(clients, func(i, j int) bool { return clients[i].ID < clients[j].ID })
		for _, c := range clients {
			if !busy[c.ID] {
				docs = append(docs, bson.D{
					{Key: "type", Value: "idleConnection"}, {Key: "host", Value: hostname()},
					{Key: "desc", Value: "conn" + itoa(c.ID)}, {Key: "connectionId", Value: c.ID},
					{Key: "client", Value: c.RemoteAddr}, {Key: "active", Value: false},
					{Key: "currentOpTime", Value: now.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
				})
			}
		}
	}
	out := bson.A{}
	for _, d := range docs {
		if filter != nil {
			ok, err := filter.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// currentOp is the command: {currentOp: 1, $ownOps, $all, <filter>...}.
// Every field that is not an option is a condition on the operation
// documents, as in MongoDB.
func (h *Handlers) currentOp(_ context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "currentOp may only be run against the admin database.")
	}
	ownOps, err := getBool(req.Cmd, "$ownOps", false)
	if err != nil {
		return nil, err
	}
	all, err := getBool(req.Cmd, "$all", false)
	if err != nil {
		return nil, err
	}
	var cond bson.D
	for _, e := range req.Cmd[1:] {
		switch {
		case e.Key == "$ownOps" || e.Key == "$all" || isGenericField(e.Key):
		default:
			cond = append(cond, e)
		}
	}
	filter, err := query.ParseFilter(cond)
	if err != nil {
		return nil, err
	}
	// As MongoDB's, the command lists idle sessions whatever $all says.
	inprog, err := h.currentOps(req, opsView{allUsers: !ownOps, idle: all, idleSessions: true, truncate: true, filter: filter})
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "inprog", Value: inprog}}, nil
}

// currentOpStage produces the documents of a leading $currentOp stage.
// Options: allUsers, idleConnections, idleCursors, idleSessions,
// localOps, truncateOps, backtrace, as MongoDB's. Idle sessions (open
// transactions between statements) are listed unless idleSessions is
// false, idle cursors with idleCursors; commands are shown whole unless
// truncateOps (mongosh's db.currentOp() asks for them whole).
func (h *Handlers) currentOpStage(req *Request, arg any) (bson.A, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	spec, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", query.TypeName(arg))
	}
	v := opsView{idleSessions: true}
	for _, e := range spec {
		b, isBool := e.Value.(bool)
		if !isBool {
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s", e.Key, query.TypeName(e.Value))
		}
		switch e.Key {
		case "allUsers":
			v.allUsers = b
		case "truncateOps":
			v.truncate = b
		case "localOps":
			// there is one server
		case "backtrace":
			if b {
				return nil, mongoerr.New(mongoerr.NotImplemented, "$currentOp's backtrace is not supported by tierdb")
			}
		case "idleCursors":
			v.idleCursors = b
		case "idleSessions":
			v.idleSessions = b
		case "idleConnections":
			v.idle = b
		default:
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", e.Key)
		}
	}
	return h.currentOps(req, v)
}

// idleSessionDocs describes the sessions whose transaction is open between
// statements, as MongoDB's idle sessions: the caller's own, or everyone's
// with allUsers.
func (h *Handlers) idleSessionDocs(req *Request, allUsers bool, now time.Time) []bson.D {
	idle := h.sessions.IdleTransactions()
	sort.Slice(idle, func(i, j int) bool { return idle[i].Started.Before(idle[j].Started) })
	me := sessionUser(req.Session)
	var docs []bson.D
	for _, it := range idle {
		if !allUsers && it.ID.User != me {
			continue
		}
		docs = append(docs, bson.D{
			{Key: "type", Value: "idleSession"}, {Key: "host", Value: hostname()},
			{Key: "desc", Value: "inactive transaction"}, {Key: "active", Value: false},
			{Key: "currentOpTime", Value: isoTime(now)},
			{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte(it.ID.UUID)}}}},
			{Key: "transaction", Value: bson.D{
				{Key: "parameters", Value: bson.D{{Key: "txnNumber", Value: it.TxnNumber}, {Key: "autocommit", Value: false}}},
				{Key: "startWallClockTime", Value: isoTime(it.Started)},
				{Key: "timeOpenMicros", Value: now.Sub(it.Started).Microseconds()},
				{Key: "expiryTime", Value: isoTime(it.Deadline)},
			}},
			{Key: "waitingForLock", Value: false},
		})
		if db, user, ok := strings.Cut(it.ID.User, "."); ok {
			docs[len(docs)-1] = append(docs[len(docs)-1], bson.E{Key: "effectiveUsers", Value: bson.A{bson.D{{Key: "user", Value: user}, {Key: "db", Value: db}}}})
		}
	}
	return docs
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// killOp interrupts an operation: {killOp: 1, op: <opid>}. The operation's
// context is canceled (a PostgreSQL statement it runs is canceled with
// it) and its client gets Interrupted (11601). Like MongoDB, the answer is
// the same whether or not the operation exists.
func (h *Handlers) killOp(_ context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "killOp may only be run against the admin database.")
	}
	v, ok := lookup(req.Cmd, "op")
	if !ok {
		return nil, mongoerr.New(mongoerr.NoSuchKey, `Missing expected field "op"`)
	}
	var id int64
	if l, isLong := v.(int64); isLong {
		id = l
	} else {
		f, isNum := asNumber(v)
		if !isNum {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, `Expected field "op" to have numeric type, but found %s`, query.TypeName(v))
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
			return nil, mongoerr.Newf(mongoerr.BadValue, `Expected field "op" to have a value exactly representable as a 64-bit integer, but found op: %v`, v)
		}
		id = int64(f)
	}
	if id < math.MinInt32 || id > math.MaxInt32 {
		return nil, mongoerr.Newf(mongoerr.Location26823, "invalid op : %d. Op ID cannot be represented with 32 bits", id)
	}
	n := int32(id)
	mayAny := h.mayCluster(req.Session, auth.Actions(auth.ActKillop))
	if h.live.kill(n, func(op *liveOp) bool {
		return mayAny || op.ownedBy(req.Session)
	}) {
		h.log.Info("operation killed", "opid", n, "by", logUser(req.Session))
	}
	return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
}
