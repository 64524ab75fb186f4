package commands

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/wire"
)

// liveOps are the requests in process (queued for admission or running),
// for currentOp and $currentOp, and the way killOp reaches one: each has
// the cancel function of its context.
// A sync.Map: every request adds and removes its own key, so requests of
// different connections never contend on one lock.
type liveOps struct {
	ops  sync.Map // int32 → *liveOp
	next atomic.Int32
}

// liveOp is one request in process: what currentOp shows of it, taken
// when it begins (on its connection's goroutine, so nothing is read while
// the connection changes it). Only tier, queued and killed change later.
type liveOp struct {
	id      int32
	name    string // the command name as sent
	ns      string
	cmd     bson.D
	start   time.Time
	user    auth.UserName // zero when unauthenticated
	connID  int64
	client  string
	meta    bson.D
	hasConn bool
	tier    atomic.Int32
	queued  atomic.Bool // waiting for admission (its tier's turn, its user's share)
	killed  atomic.Bool
	cancel  context.CancelFunc
}

type liveOpKey struct{}

func newLiveOps() *liveOps { return &liveOps{} }

// begin registers a request (c is its table entry, nil when unknown);
// the returned context is canceled by kill.
func (l *liveOps) begin(ctx context.Context, req *Request, c *command) (context.Context, *liveOp) {
	ctx, cancel := context.WithCancel(ctx)
	op := &liveOp{start: time.Now(), cancel: cancel, ns: req.DB + ".$cmd", cmd: bson.D{}}
	if len(req.Cmd) > 0 {
		op.name = req.Cmd[0].Key
		op.cmd = req.Cmd
		coll, _ := req.Cmd[0].Value.(string)
		switch op.name {
		case "getMore":
			v, _ := lookup(req.Cmd[1:], "collection")
			coll, _ = v.(string)
		case "explain":
			if inner, ok := req.Cmd[0].Value.(bson.D); ok && len(inner) > 0 {
				coll, _ = inner[0].Value.(string)
			}
		}
		if coll != "" && c != nil && c.access.kind == accessCollection {
			op.ns = req.DB + "." + coll
		}
	}
	if s := req.Session; s != nil {
		op.hasConn, op.connID, op.client, op.meta = true, s.ID, s.RemoteAddr, s.Client
		if s.User != nil {
			op.user = s.User.User.Name
		}
	}
	op.tier.Store(int32(qos.Normal))
	for {
		// opids are positive int32s, as MongoDB's; one that is still in use
		// after the counter wrapped is skipped.
		op.id = l.next.Add(1) & 0x7fffffff
		if op.id == 0 {
			continue
		}
		if _, taken := l.ops.LoadOrStore(op.id, op); !taken {
			break
		}
	}
	return context.WithValue(ctx, liveOpKey{}, op), op
}

// end forgets the request.
func (l *liveOps) end(op *liveOp) {
	l.ops.Delete(op.id)
	op.cancel()
}

// setOpTier records the tier the request runs at, once known.
func setOpTier(ctx context.Context, t qos.Tier) {
	if op, _ := ctx.Value(liveOpKey{}).(*liveOp); op != nil {
		op.tier.Store(int32(t))
	}
}

// ownedBy says whether the operation is s's user's (both unauthenticated
// counts as the same, as sessionUser compares).
func (op *liveOp) ownedBy(s *Session) bool {
	var u auth.UserName
	if s != nil && s.User != nil {
		u = s.User.User.Name
	}
	return op.user == u
}

// kill interrupts the operation with opid id: its context is canceled and
// its error becomes Interrupted. It reports whether the operation exists
// and may says the caller may kill it.
func (l *liveOps) kill(id int32, may func(*liveOp) bool) bool {
	v, _ := l.ops.Load(id)
	op, _ := v.(*liveOp)
	if op == nil || !may(op) {
		return false
	}
	op.killed.Store(true)
	op.cancel()
	return true
}

// snapshot lists the operations in process, oldest first.
func (l *liveOps) snapshot() []*liveOp {
	var out []*liveOp
	l.ops.Range(func(_, v any) bool {
		out = append(out, v.(*liveOp))
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Client is an open connection: its id and the client's address.
type Client struct {
	ID         int64
	RemoteAddr string
}

// interrupted is the error a killed operation answers with.
func interrupted() error {
	return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
}

// maxOpCommandBytes bounds the command document shown for one operation
// where MongoDB truncates it (the currentOp command, truncateOps, idle
// cursors); maxWholeCommandBytes where it shows it whole, so that the
// operation's document stays within BSON's limit. A larger one is shown
// as MongoDB shows a truncated one ($truncated).
const (
	maxOpCommandBytes    = 1024
	maxWholeCommandBytes = wire.MaxBSONObjectSize - 64<<10
)

// sensitiveCommands carry passwords or keys: only their name is shown.
var sensitiveCommands = map[string]bool{
	"createUser": true, "updateUser": true, "saslStart": true, "saslContinue": true,
	"authenticate": true, "hello": true, "isMaster": true, "ismaster": true,
}

// doc describes the operation as MongoDB's currentOp does, plus its tier
// and whether it still waits for admission (the priority channel, the
// user's fair share, delivered parallelism); its command is shown whole
// up to limit bytes (shownCommand), which are returned.
func (op *liveOp) doc(now time.Time, limit int) (bson.D, int) {
	running := now.Sub(op.start)
	cmd, shown := shownCommand(op.name, op.cmd, limit)
	d := bson.D{
		{Key: "type", Value: "op"},
		{Key: "host", Value: hostname()},
		{Key: "active", Value: true},
		{Key: "currentOpTime", Value: now.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
		{Key: "opid", Value: op.id},
	}
	if op.hasConn {
		d = append(d,
			bson.E{Key: "desc", Value: "conn" + itoa(op.connID)},
			bson.E{Key: "connectionId", Value: op.connID},
			bson.E{Key: "client", Value: op.client},
		)
		if op.meta != nil {
			if app, _ := lookup(op.meta, "application"); app != nil {
				if ad, ok := app.(bson.D); ok {
					if name, ok := lookup(ad, "name"); ok {
						d = append(d, bson.E{Key: "appName", Value: name})
					}
				}
			}
			d = append(d, bson.E{Key: "clientMetadata", Value: op.meta})
		}
		if op.user != (auth.UserName{}) {
			d = append(d, bson.E{Key: "effectiveUsers", Value: bson.A{bson.D{{Key: "user", Value: op.user.User}, {Key: "db", Value: op.user.DB}}}})
		}
	}
	if lsid, ok := lookup(op.cmd, "lsid"); ok {
		d = append(d, bson.E{Key: "lsid", Value: lsid})
	}
	d = append(d,
		bson.E{Key: "secs_running", Value: int64(running.Seconds())},
		bson.E{Key: "microsecs_running", Value: running.Microseconds()},
		bson.E{Key: "op", Value: opKind(op.name)},
		bson.E{Key: "ns", Value: op.ns},
		bson.E{Key: "command", Value: cmd},
		bson.E{Key: "numYields", Value: int32(0)},
		bson.E{Key: "waitingForLock", Value: false},
		bson.E{Key: "killPending", Value: op.killed.Load()},
		bson.E{Key: "tier", Value: qos.Tier(op.tier.Load()).String()},
		bson.E{Key: "waitingForAdmission", Value: op.queued.Load()},
	)
	return d, shown
}

// opKind is MongoDB's op field: the CRUD kind, else "command".
func opKind(name string) string {
	switch name {
	case "find":
		return "query"
	case "insert":
		return "insert"
	case "update":
		return "update"
	case "delete":
		return "remove"
	case "getMore":
		return "getmore"
	}
	return "command"
}

// shownCommand is the command document as shown, and its size in bytes:
// the whole document (lsid and $db included, as MongoDB shows them) while
// it is at most limit bytes, else its head marked $truncated; never a
// sensitive command's arguments.
func shownCommand(name string, doc bson.D, limit int) (bson.D, int) {
	if len(doc) == 0 {
		return bson.D{}, 5
	}
	if sensitiveCommands[name] {
		return bson.D{{Key: name, Value: doc[0].Value}}, len(name) + 16
	}
	cmd := doc
	if fitsIn(cmd, limit) {
		if raw, err := bsonx.AppendDocument(nil, cmd); err == nil && len(raw) <= limit {
			return cmd, len(raw)
		}
	}
	text := ""
	if b, err := bson.MarshalExtJSON(cmd[:1], false, false); err == nil {
		text = string(b)
	}
	why := "command larger than 1 KB"
	if limit != maxOpCommandBytes {
		why = "command too large to show whole"
	}
	return bson.D{{Key: "$truncated", Value: text}, {Key: "comment", Value: why}}, len(text) + 64
}

// fitsIn reports whether v's BSON is about budget bytes or less, looking
// at no more of it than that: a 48 MB insert is not walked to be shown.
func fitsIn(v any, budget int) bool {
	return remaining(v, budget) >= 0
}

func remaining(v any, budget int) int {
	switch x := v.(type) {
	case bson.D:
		budget -= 5
		for _, e := range x {
			if budget = remaining(e.Value, budget-len(e.Key)-2); budget < 0 {
				return budget
			}
		}
		return budget
	case bson.A:
		budget -= 5
		for _, e := range x {
			if budget = remaining(e, budget-3); budget < 0 {
				return budget
			}
		}
		return budget
	case string:
		return budget - len(x) - 5
	case bson.Binary:
		return budget - len(x.Data) - 5
	case bson.Raw:
		return budget - len(x)
	}
	return budget - 16
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
