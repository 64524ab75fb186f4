package commands

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/storage"
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
}

type handlerFunc func(ctx context.Context, req *Request) (bson.D, error)

// command is one entry of the table.
type command struct {
	handler handlerFunc
	help    string
	// counter is the serverStatus opcounter the command bumps.
	counter opCounter
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
	h := &Handlers{opts: opts, log: opts.Logger, store: opts.Store, started: time.Now(), processID: bson.NewObjectID()}
	h.cursors = newCursorRegistry(opts.CursorTimeout)
	h.table = h.commands()
	return h
}

// Close stops background work (the cursor reaper).
func (h *Handlers) Close() { h.cursors.close() }

// commands is the table. Aliases point to the same entry.
func (h *Handlers) commands() map[string]*command {
	t := map[string]*command{
		// handshake and diagnostics
		"hello":                   {handler: h.hello, help: "describe this server to a driver"},
		"ping":                    {handler: h.ping, help: "check the server answers"},
		"buildInfo":               {handler: h.buildInfo, help: "server version and limits"},
		"getParameter":            {handler: h.getParameter, help: "read server parameters"},
		"connectionStatus":        {handler: h.connectionStatus, help: "authentication state of this connection"},
		"whatsmyuri":              {handler: h.whatsmyuri, help: "the client's address as the server sees it"},
		"endSessions":             {handler: h.ok, help: "accepted; sessions hold no server state"},
		"serverStatus":            {handler: h.serverStatus, help: "uptime, connections, opcounters"},
		"hostInfo":                {handler: h.hostInfo, help: "the host's OS and hardware"},
		"getCmdLineOpts":          {handler: h.getCmdLineOpts, help: "the command line tierdb was started with"},
		"getLog":                  {handler: h.getLog, help: "recent log lines (none are kept)"},
		"currentOp":               {handler: h.currentOp, help: "operations in progress"},
		"listCommands":            {handler: h.listCommands, help: "this list"},
		"getFreeMonitoringStatus": {handler: h.freeMonitoring, help: "always disabled"},
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
		"killCursors":   {handler: h.killCursors, help: "close cursors"},
		"update":        {handler: h.update, help: "update documents", counter: opUpdate},
		"delete":        {handler: h.delete, help: "delete documents", counter: opDelete},
		"findAndModify": {handler: h.findAndModify, help: "update or remove one document and return it", counter: opCommand},
		"count":         {handler: h.count, help: "count matching documents", counter: opCommand},
		"aggregate":     {handler: h.aggregate, help: "aggregation pipeline ($match, $group, $count, $sort, $skip, $limit, $project)", counter: opCommand},
		"explain":       {handler: h.explain, help: "the PostgreSQL plan of a find"},
	}
	t["isMaster"] = t["hello"]
	t["ismaster"] = t["hello"]
	t["buildinfo"] = t["buildInfo"]
	t["findandmodify"] = t["findAndModify"]
	return t
}

// Dispatch runs one command and always returns a reply document. It is the
// single wrapper around every handler: command lookup, opcounters, error mapping
// and logging of internal errors.
func (h *Handlers) Dispatch(ctx context.Context, req *Request) bson.D {
	if len(req.Cmd) == 0 {
		return errorReply(mongoerr.New(mongoerr.CommandNotFound, "no command given"))
	}
	name := req.Cmd[0].Key
	cmd, ok := h.table[name]
	if !ok {
		// Drivers sometimes lower-case; MongoDB matches names exactly except
		// for a few aliases, which the table lists.
		return errorReply(mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", name))
	}
	req.Name = name
	h.ops.add(cmd.counter)
	if req.DB == "" {
		return errorReply(mongoerr.New(mongoerr.InvalidNamespace, "command has no $db field"))
	}
	if err := validateDBName(req.DB); err != nil {
		e, _ := Map(err)
		return errorReply(e)
	}
	ctx, cancel, err := withMaxTime(ctx, req.Cmd)
	if err != nil {
		e, _ := Map(err)
		return errorReply(e)
	}
	defer cancel()
	reply, err := cmd.handler(ctx, req)
	if err != nil {
		e, internal := Map(err)
		if internal {
			h.log.Error("command failed", "cmd", name, "db", req.DB, "err", err)
		} else if e.Cause != nil {
			h.log.Debug("command error", "cmd", name, "db", req.DB, "err", err)
		}
		return errorReply(e)
	}
	return append(reply, bson.E{Key: "ok", Value: 1.0})
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
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "collection name has invalid type %s", typeName(req.Cmd[0].Value))
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
