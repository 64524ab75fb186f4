package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/metrics"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/query"
	"tierdb/internal/storage"
	"tierdb/internal/tierctl"
)

// Session is the per-connection state commands may read and change.
type Session struct {
	ID         int64
	RemoteAddr string
	Tier       qos.Tier
	// Client is the driver metadata sent with the first hello.
	Client bson.D
}

// Request is one command invocation.
type Request struct {
	DB      string
	Name    string // the command name as the table knows it
	Cmd     bson.D // the whole command document
	Session *Session
	cmd     *command
	tier    qos.Tier
}

type handlerFunc func(ctx context.Context, req *Request) (bson.D, error)

// command is one entry of the table.
type command struct {
	handler handlerFunc
	help    string
	// counter is the serverStatus opcounter the command bumps.
	counter opCounter
	name    string // canonical name, for metrics
	calls   atomic.Int64
	fails   atomic.Int64
	// internal commands never wait for admission: handshakes, diagnostics,
	// and the tier change itself (seed 000: the channel must not block the
	// requests that change priority).
	internal bool
}

// Options configure the command layer.
type Options struct {
	Store  *storage.Store
	Logger *slog.Logger
	// CursorTimeout closes cursors idle for longer (default 10 minutes).
	CursorTimeout time.Duration
	// Argv is reported by getCmdLineOpts.
	Argv []string
	// Connections reports current and total connection counts for serverStatus.
	Connections func() (current, total int64)
	// CurrentOps lists the operations in flight for currentOp.
	CurrentOps func() bson.A
	// Admission gates every non-internal request (the priority channel);
	// nil admits everything at once (--qos=off).
	Admission Admitter
	// QoS is the running QoS configuration; nil with --qos=off. When set,
	// its priority channel is the Admission.
	QoS *tierctl.Manager
	// TestCommands enables commands only tests need (sleep).
	TestCommands bool
	// AuthorizeTier says whether a session may use a tier; nil allows every
	// tier. The auth issue fills it with the user's tier privileges.
	AuthorizeTier func(s *Session, t qos.Tier) error
}

// Admitter is the admission contract: Admit blocks until a request of tier t
// may run and returns done, to be called when it ends.
type Admitter interface {
	Admit(ctx context.Context, t qos.Tier, internal bool) (done func(), err error)
}

// Handlers holds the command table and what its handlers share.
type Handlers struct {
	opts    Options
	log     *slog.Logger
	store   *storage.Store
	table   map[string]*command
	cursors *cursorRegistry
	started time.Time
	ops     opCounters
	// latency is the duration of requests per tier, admission wait included.
	latency [qos.NumTiers]*metrics.Histogram
	// processID identifies this process in topologyVersion.
	processID bson.ObjectID
}

// New builds the command table.
func New(opts Options) *Handlers {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CursorTimeout <= 0 {
		opts.CursorTimeout = 10 * time.Minute
	}
	if opts.QoS != nil && opts.Admission == nil {
		opts.Admission = opts.QoS.Channel
	}
	h := &Handlers{opts: opts, log: opts.Logger, store: opts.Store, started: time.Now(), processID: bson.NewObjectID()}
	h.cursors = newCursorRegistry(opts.CursorTimeout)
	h.table = h.commands()
	for name, c := range h.table {
		if c.name == "" {
			c.name = name
		}
	}
	for t := range h.latency {
		h.latency[t] = metrics.NewHistogram(metrics.LatencyBuckets())
	}
	return h
}

// Close stops background work (the cursor reaper).
func (h *Handlers) Close() { h.cursors.close() }

// commands is the table. Aliases point to the same entry.
func (h *Handlers) commands() map[string]*command {
	t := map[string]*command{
		// handshake and diagnostics
		"hello":                   {handler: h.hello, help: "describe this server to a driver", internal: true},
		"qosStatus":               {handler: h.qosStatus, help: "priority channel, tiers, CPU pools and the caller's tier", internal: true},
		"setQoSConfig":            {handler: h.setQoSConfig, help: "change threshold, starvation guard, nice levels, I/O priorities, CPU pools", internal: true},
		"setCpuPools":             {handler: h.setCpuPools, help: "set the priority, standard and restricted CPU pools", internal: true},
		"setClientPriority":       {handler: h.setClientPriority, help: "set this connection's tier: " + tierNames(), internal: true},
		"ping":                    {handler: h.ping, help: "check the server answers", internal: true},
		"buildInfo":               {handler: h.buildInfo, help: "server version and limits", internal: true},
		"getParameter":            {handler: h.getParameter, help: "read server parameters", internal: true},
		"connectionStatus":        {handler: h.connectionStatus, help: "authentication state of this connection", internal: true},
		"whatsmyuri":              {handler: h.whatsmyuri, help: "the client's address as the server sees it", internal: true},
		"endSessions":             {handler: h.ok, help: "accepted; sessions hold no server state", internal: true},
		"serverStatus":            {handler: h.serverStatus, help: "uptime, connections, opcounters", internal: true},
		"hostInfo":                {handler: h.hostInfo, help: "the host's OS and hardware", internal: true},
		"getCmdLineOpts":          {handler: h.getCmdLineOpts, help: "the command line tierdb was started with", internal: true},
		"getLog":                  {handler: h.getLog, help: "recent log lines (none are kept)", internal: true},
		"currentOp":               {handler: h.currentOp, help: "operations in progress", internal: true},
		"listCommands":            {handler: h.listCommands, help: "this list", internal: true},
		"getFreeMonitoringStatus": {handler: h.freeMonitoring, help: "always disabled", internal: true},
		// databases and collections
		"listDatabases":   {handler: h.listDatabases, help: "databases with their sizes"},
		"listCollections": {handler: h.listCollections, help: "collections of a database"},
		"create":          {handler: h.create, help: "create a collection"},
		"drop":            {handler: h.drop, help: "drop a collection"},
		"dropDatabase":    {handler: h.dropDatabase, help: "drop a database"},
		"createIndexes":   {handler: h.createIndexes, help: "create indexes"},
		"listIndexes":     {handler: h.listIndexes, help: "indexes of a collection"},
		"dropIndexes":     {handler: h.dropIndexes, help: "drop indexes"},
		// CRUD
		"insert":        {handler: h.insert, help: "insert documents", counter: opInsert},
		"find":          {handler: h.find, help: "query documents", counter: opQuery},
		"getMore":       {handler: h.getMore, help: "next batch of a cursor", counter: opGetMore},
		"killCursors":   {handler: h.killCursors, help: "close cursors", internal: true},
		"update":        {handler: h.update, help: "update documents", counter: opUpdate},
		"delete":        {handler: h.delete, help: "delete documents", counter: opDelete},
		"findAndModify": {handler: h.findAndModify, help: "update or remove one document and return it", counter: opCommand},
		"count":         {handler: h.count, help: "count matching documents", counter: opCommand},
		"aggregate":     {handler: h.aggregate, help: "aggregation pipeline ($match, $group, $count, $sort, $skip, $limit, $project)", counter: opCommand},
		"explain":       {handler: h.explain, help: "the PostgreSQL plan of a find"},
	}
	if h.opts.TestCommands {
		t["sleep"] = &command{handler: h.sleep, help: "test command: hold a request in process for millis"}
	}
	for name, c := range t {
		c.name = name
	}
	t["isMaster"] = t["hello"]
	t["ismaster"] = t["hello"]
	t["buildinfo"] = t["buildInfo"]
	t["findandmodify"] = t["findAndModify"]
	return t
}

// Dispatch runs one command and always returns a reply document. It is the
// single wrapper around every handler: command lookup, opcounters, the
// request's tier and its admission, maxTimeMS, and the mapping of errors to
// MongoDB codes (with internal errors logged, never shown).
func (h *Handlers) Dispatch(ctx context.Context, req *Request) bson.D {
	start := time.Now()
	reply, err := h.run(ctx, req)
	h.latency[req.tier].ObserveDuration(time.Since(start))
	if err != nil {
		if req.cmd != nil {
			req.cmd.fails.Add(1)
		}
		e, internal := Map(err)
		if internal {
			h.log.Error("command failed", "cmd", req.Name, "db", req.DB, "err", err)
		} else if e.Cause != nil {
			h.log.Debug("command error", "cmd", req.Name, "db", req.DB, "err", err)
		}
		return errorReply(e)
	}
	return append(reply, bson.E{Key: "ok", Value: 1.0})
}

func (h *Handlers) run(ctx context.Context, req *Request) (bson.D, error) {
	req.tier = qos.Normal
	if len(req.Cmd) == 0 {
		return nil, mongoerr.New(mongoerr.CommandNotFound, "no command given")
	}
	name := req.Cmd[0].Key
	cmd, ok := h.table[name]
	if !ok {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", name)
	}
	req.Name = name
	req.cmd = cmd
	h.ops.add(cmd.counter)
	cmd.calls.Add(1)
	if req.DB == "" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "command has no $db field")
	}
	if err := validateDBName(req.DB); err != nil {
		return nil, err
	}
	tier, err := h.requestTier(req)
	if err != nil {
		return nil, err
	}
	req.tier = tier
	ctx = qos.WithTier(ctx, tier)
	ctx, cancel, err := withMaxTime(ctx, req.Cmd)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if h.opts.Admission != nil && !cmd.internal {
		done, err := h.opts.Admission.Admit(ctx, tier, false)
		if err != nil {
			return nil, err
		}
		defer done()
	}
	return cmd.handler(ctx, req)
}

// withMaxTime applies maxTimeMS to the request context.
func withMaxTime(ctx context.Context, cmd bson.D) (context.Context, context.CancelFunc, error) {
	ms, err := getInt(cmd, "maxTimeMS", 0)
	if err != nil {
		return ctx, func() {}, err
	}
	if ms < 0 {
		return ctx, func() {}, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be non-negative")
	}
	if ms == 0 {
		return ctx, func() {}, nil
	}
	c, cancel := context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
	return c, cancel, nil
}

func validateDBName(db string) error {
	if len(db) > 63 {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "db name is too long: %s", db)
	}
	if strings.ContainsAny(db, "/\\. \"$\x00") {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}

// collectionName reads the collection name that is the command's first value.
func collectionName(req *Request) (string, error) {
	name, ok := req.Cmd[0].Value.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "collection name has invalid type %s", query.TypeName(req.Cmd[0].Value))
	}
	if name == "" || strings.ContainsAny(name, "$\x00") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.%s'", req.DB, name)
	}
	if len(req.DB)+1+len(name) > 255 {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: 255", req.DB, name)
	}
	return name, nil
}

func (h *Handlers) ok(context.Context, *Request) (bson.D, error) { return bson.D{}, nil }
