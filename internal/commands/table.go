package commands

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/gctune"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/query"
	"tierdb/internal/router"
	"tierdb/internal/session"
	"tierdb/internal/status"
	"tierdb/internal/storage"
	"tierdb/internal/tierctl"
)

// Session is the per-connection state commands may read and change. Only
// the connection's handler goroutine touches it.
type Session struct {
	ID         int64
	RemoteAddr string
	Tier       qos.Tier
	// Client is the driver metadata sent with the first hello.
	Client bson.D
	// Loopback: the client connects from a loopback address, which the
	// localhost exception (creating the first user) requires.
	Loopback bool
	// ReadPreference is the default of reads that carry none
	// (setReadPreference); nil: the user's default, else primary.
	ReadPreference *router.Preference
	// User is the authenticated principal; nil until authentication.
	User *auth.Principal
	// sasl is the authentication conversation in progress, if any.
	sasl   *saslConv
	convID int32
	// acct is the per-user accounting of the authenticated user.
	acct *userAccount
	// fairName is who the session's requests count for in the fair share
	// (fairPrincipal), worked out once for fairFor (the User it was made
	// for; nil: the peer host) rather than at every request.
	fairName string
	fairFor  *auth.Principal
}

// Request is one command invocation.
type Request struct {
	DB      string
	Name    string // the command name as the table knows it
	Cmd     bson.D // the whole command document
	Session *Session
	cmd     *command
	tier    qos.Tier
	// on is where the request's storage work runs: run sets its tier (the
	// one admission decided), the transaction wrappers its Txn and the
	// write concern its Async. A read handler adds the node the router
	// chose (routeRead) to the On it passes down; nothing finds any of
	// this in the context.
	on storage.On
	// arrived is when Dispatch began the request (its latency histograms'
	// start), which admission reuses rather than read the clock again.
	arrived time.Time
	// hold is the request's admission, if it took one: Dispatch gives it
	// back when run has returned, at the time it ends the histograms' span.
	hold *admissionHold
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
	// writes: the command takes a writeConcern, checked before it runs and
	// waited for after (writeconcern.go).
	writes bool
	// access is what the one authorization check requires; an entry that
	// says nothing needs root.
	access access
}

// Options configure the command layer.
type Options struct {
	Store  Store
	Logger *slog.Logger
	// CursorTimeout closes cursors idle for longer (default 10 minutes).
	CursorTimeout time.Duration
	// Argv is reported by getCmdLineOpts.
	Argv []string
	// Connections reports current and total connection counts for serverStatus.
	Connections func() (current, total int64)
	// Clients lists the open connections (currentOp's idle connections).
	Clients func() []Client
	// Admission gates every non-internal request (the priority channel);
	// nil admits everything at once (--qos=off).
	Admission Admitter
	// QoS is the running QoS configuration; nil with --qos=off. When set,
	// its priority channel is the Admission and its gate the Fair.
	QoS *tierctl.Manager
	// Fair gates requests after Admission: the user's share within its
	// tier, then delivered parallelism; nil admits at once.
	Fair FairAdmitter
	// TestCommands enables commands only tests need (sleep).
	TestCommands bool
	// Replication routes reads and waits for write concerns; nil runs
	// every read on the primary and refuses w > 1.
	Replication *Replication
	// Auth holds users and roles; every request is checked against it
	// (authorize) and tiers against the user's tier privileges. nil means
	// no access control at all (unit tests).
	Auth *auth.Registry
	// SessionTimeout forgets logical sessions idle for longer
	// (logicalSessionTimeoutMinutes, default 30 minutes); TxnLifetime
	// aborts transactions open for longer
	// (transactionLifetimeLimitSeconds, default 60 s).
	SessionTimeout time.Duration
	TxnLifetime    time.Duration
	// SlowThreshold logs each operation that takes longer (with user,
	// tier, command, namespace, duration and plan summary, never
	// document contents) and keeps it for the status page; 0: off.
	SlowThreshold time.Duration
	// TTLInterval is the time between two passes of the TTL monitor
	// (ttl.go; MongoDB's ttlMonitorSleepSecs, default 60 s); negative: off.
	TTLInterval time.Duration
	// GC paces Go's collector (serverStatus reports it); nil when GOGC
	// was set.
	GC *gctune.Tuner
}

// Admitter is the admission contract: Admit blocks until a request of tier t
// may run; its Entry's Done ends it. Enter counts a request of tier t in
// process at once, without waiting: the statements of a transaction already
// admitted, which may hold locks that the requests they would wait behind
// need.
type Admitter interface {
	Admit(ctx context.Context, t qos.Tier, internal bool) (qos.Entry, error)
	Enter(t qos.Tier) qos.Entry
}

// FairAdmitter is the second admission contract: Admit blocks until a
// request of user (with its weight) at tier t, arrived at the time given,
// may run; its Admission's Done (or DoneAt, with the end the caller
// read) ends it.
type FairAdmitter interface {
	Admit(ctx context.Context, t qos.Tier, p qos.Principal, arrived time.Time) (qos.Admission, error)
}

// Handlers holds the command table and what its handlers share.
type Handlers struct {
	opts    Options
	log     *slog.Logger
	store   Store
	table   map[string]*command
	cursors *cursorRegistry
	started time.Time
	ops     opCounters
	// instr are the latency and wait histograms (observe.go); slow the
	// recent slow operations.
	instr *instruments
	slow  *status.SlowLog
	// processID identifies this process in topologyVersion.
	processID bson.ObjectID
	// accounts are the per-user figures; authStats count authentications.
	accounts  *accounts
	authStats authStats
	// sessions are the logical sessions with transactions.
	sessions *session.Registry
	txnStats txnStats
	ttl      ttlStats
	stop     chan struct{}
	// changes is the change streams' hub, started by the first one.
	changes changeHub
	// live are the requests in process (currentOp, killOp).
	live *liveOps
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
	if opts.QoS != nil && opts.Fair == nil && opts.QoS.Gate != nil {
		opts.Fair = opts.QoS.Gate
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.TxnLifetime <= 0 {
		opts.TxnLifetime = 60 * time.Second
	}
	h := &Handlers{opts: opts, log: opts.Logger, store: opts.Store, started: time.Now(), processID: bson.NewObjectID(), stop: make(chan struct{})}
	h.sessions = session.NewRegistry(time.Now, opts.SessionTimeout, opts.TxnLifetime)
	h.cursors = newCursorRegistry(opts.CursorTimeout)
	h.accounts = newAccounts()
	h.live = newLiveOps()
	h.table = h.commands()
	for name, c := range h.table {
		if c.name == "" {
			c.name = name
		}
	}
	h.instr, h.slow = newInstruments(), status.NewSlowLog(100)
	go h.reapSessions()
	go h.maintainChanges() // changehub.go
	if opts.TTLInterval == 0 {
		opts.TTLInterval = 60 * time.Second
	}
	if h.store != nil && opts.TTLInterval > 0 {
		go h.runTTL(opts.TTLInterval)
	}
	return h
}

// Close stops background work (the cursor and session reapers) and aborts
// open transactions.
func (h *Handlers) Close() {
	h.cursors.close()
	close(h.stop)
	h.sessions.EndMatching(func(session.ID) bool { return true })
}

// reapSessions aborts transactions past their lifetime and forgets idle
// sessions and their durable records, as MongoDB's session reaper does.
func (h *Handlers) reapSessions() {
	tick := time.NewTicker(min(time.Second, h.opts.TxnLifetime/4))
	defer tick.Stop()
	lastRecords := time.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		h.sessions.Reap()
		if h.store != nil && time.Since(lastRecords) >= min(time.Minute, h.opts.SessionTimeout/4) {
			lastRecords = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := h.store.ReapRecords(ctx, h.opts.SessionTimeout); err != nil {
				h.log.Warn("expiring session records failed", "err", err)
			}
			cancel()
		}
	}
}

// commands is the table. Aliases point to the same entry.
func (h *Handlers) commands() map[string]*command {
	t := map[string]*command{
		// handshake, authentication and diagnostics
		"hello":                   {handler: h.hello, help: "describe this server to a driver", internal: true, access: open},
		"saslStart":               {handler: h.saslStart, help: "start a SCRAM-SHA-256 or SCRAM-SHA-1 authentication", internal: true, access: open},
		"saslContinue":            {handler: h.saslContinue, help: "continue an authentication", internal: true, access: open},
		"logout":                  {handler: h.logout, help: "end this connection's authentication", internal: true, access: open},
		"qosStatus":               {handler: h.qosStatus, help: "priority channel, tiers, CPU pools, per-user figures and the caller's tier", internal: true, access: anyUser},
		"setQoSConfig":            {handler: h.setQoSConfig, help: "change threshold, starvation guard, nice levels, I/O priorities, CPU pools", internal: true, access: onCluster(auth.ActSetQoSConfig)},
		"setCpuPools":             {handler: h.setCpuPools, help: "set the priority, standard and restricted CPU pools", internal: true, access: onCluster(auth.ActSetCpuPools)},
		"setClientPriority":       {handler: h.setClientPriority, help: "set this connection's tier: " + tierNames(), internal: true, access: anyUser},
		"ping":                    {handler: h.ping, help: "check the server answers", internal: true, access: open},
		"buildInfo":               {handler: h.buildInfo, help: "server version and limits", internal: true, access: open},
		"getParameter":            {handler: h.getParameter, help: "read server parameters", internal: true, access: onCluster(auth.ActGetParameter)},
		"connectionStatus":        {handler: h.connectionStatus, help: "authentication state of this connection", internal: true, access: open},
		"whatsmyuri":              {handler: h.whatsmyuri, help: "the client's address as the server sees it", internal: true, access: open},
		"startSession":            {handler: h.startSession, help: "a new logical session id", internal: true, access: anyUser},
		"endSessions":             {handler: h.endSessions, help: "end sessions: abort their transactions, forget their retryable writes", internal: true, access: anyUser},
		"killSessions":            {handler: h.endSessions, help: "end the caller's sessions", internal: true, access: anyUser},
		"refreshSessions":         {handler: h.refreshSessions, help: "keep sessions from expiring", internal: true, access: anyUser},
		"killAllSessions":         {handler: h.killAllSessions, help: "end every session of the named users (all with [])", internal: true, access: onCluster(auth.ActKillAnySession)},
		"serverStatus":            {handler: h.serverStatusWithSecurity, help: "uptime, connections, opcounters, authentications", internal: true, access: onCluster(auth.ActServerStatus)},
		"hostInfo":                {handler: h.hostInfo, help: "the host's OS and hardware", internal: true, access: onCluster(auth.ActHostInfo)},
		"getCmdLineOpts":          {handler: h.getCmdLineOpts, help: "the command line tierdb was started with", internal: true, access: onCluster(auth.ActGetCmdLineOpts)},
		"getLog":                  {handler: h.getLog, help: "recent log lines (none are kept)", internal: true, access: onCluster(auth.ActGetLog)},
		"currentOp":               {handler: h.currentOp, help: "operations in progress (everyone's needs inprog; $ownOps: the caller's)", internal: true, access: anyUser},
		"killOp":                  {handler: h.killOp, help: "interrupt an operation by opid (another user's needs killop)", internal: true, access: anyUser},
		"listCommands":            {handler: h.listCommands, help: "this list", internal: true, access: open},
		"getFreeMonitoringStatus": {handler: h.freeMonitoring, help: "always disabled", internal: true, access: anyUser},
		// users and roles
		"createUser":               {handler: h.createUser, help: "create a user", internal: true, access: onDB(auth.ActCreateUser)},
		"updateUser":               {handler: h.updateUser, help: "change a user's password, roles, custom data or default tier", internal: true, access: onDB(auth.ActChangePassword)},
		"dropUser":                 {handler: h.dropUser, help: "drop a user", internal: true, access: onDB(auth.ActDropUser)},
		"usersInfo":                {handler: h.usersInfo, help: "describe users", internal: true, access: anyUser},
		"createRole":               {handler: h.createRole, help: "create a role", internal: true, access: onDB(auth.ActCreateRole)},
		"updateRole":               {handler: h.updateRole, help: "replace a role's privileges or roles", internal: true, access: onDB(auth.ActGrantRole, auth.ActRevokeRole)},
		"dropRole":                 {handler: h.dropRole, help: "drop a role", internal: true, access: onDB(auth.ActDropRole)},
		"rolesInfo":                {handler: h.rolesInfo, help: "describe roles", internal: true, access: anyUser},
		"grantRolesToUser":         {handler: h.grantRolesToUser, help: "grant roles to a user", internal: true, access: onDB(auth.ActGrantRole)},
		"revokeRolesFromUser":      {handler: h.revokeRolesFromUser, help: "revoke roles from a user", internal: true, access: onDB(auth.ActRevokeRole)},
		"grantPrivilegesToRole":    {handler: h.grantPrivilegesToRole, help: "add privileges to a role", internal: true, access: onDB(auth.ActGrantRole)},
		"revokePrivilegesFromRole": {handler: h.revokePrivilegesFromRole, help: "remove privileges from a role", internal: true, access: onDB(auth.ActRevokeRole)},
		// databases and collections
		"listDatabases":    {handler: h.listDatabases, help: "databases with their sizes", access: onCluster(auth.ActListDatabases)},
		"listCollections":  {handler: h.listCollections, help: "collections of a database", access: onDB(auth.ActListCollections)},
		"create":           {handler: h.createCollectionOrView, writes: true, help: "create a collection, or a view (viewOn, pipeline)", access: onColl(auth.ActCreateCollection)},
		"drop":             {handler: h.onViews(h.drop, h.dropView), writes: true, help: "drop a collection or a view", access: onColl(auth.ActDropCollection)},
		"dropDatabase":     {handler: h.dropDatabaseAndViews, writes: true, help: "drop a database", access: onDB(auth.ActDropDatabase)},
		"createIndexes":    {handler: h.onViews(h.createIndexes, nil), writes: true, help: "create indexes", access: onColl(auth.ActCreateIndex)},
		"listIndexes":      {handler: h.onViews(h.listIndexes, nil), help: "indexes of a collection", access: onColl(auth.ActListIndexes)},
		"dropIndexes":      {handler: h.onViews(h.dropIndexes, nil), writes: true, help: "drop indexes", access: onColl(auth.ActDropIndex)},
		"collMod":          {handler: h.onViews(collModNotView(h.collMod), h.collModView), writes: true, help: "change an index's hidden or expireAfterSeconds option, or a view's viewOn and pipeline", access: onColl(auth.ActCollMod)},
		"dbStats":          {handler: h.dbStats, help: "a database's counts and sizes (PostgreSQL's)", access: onDB(auth.ActDBStats)},
		"collStats":        {handler: h.onViews(h.collStats, nil), help: "a collection's counts and sizes (PostgreSQL's)", access: onColl(auth.ActCollStats)},
		"validate":         {handler: h.onViews(h.validate, nil), help: "check every document and index entry of a collection", access: onColl(auth.ActValidate)},
		"renameCollection": {handler: h.renameCollection, writes: true, help: "rename a collection, within or across databases (run on admin)", access: anyUser},
		// Not implemented: refused with NotImplemented (dbadmin.go).
		"convertToCapped":         {handler: cappedConversion("convertToCapped"), internal: true, help: "not supported: answers NotImplemented (create a capped collection and copy into it)", access: onColl(auth.ActCreateCollection)},
		"cloneCollectionAsCapped": {handler: cappedConversion("cloneCollectionAsCapped"), internal: true, help: "not supported: answers NotImplemented (create a capped collection and copy into it)", access: onColl(auth.ActCreateCollection)},
		// CRUD
		"insert":        {handler: h.onViews(h.insert, nil), writes: true, help: "insert documents", counter: opInsert, access: onColl(auth.ActInsert)},
		"find":          {handler: findDiskUse(h.onViews(h.find, h.findOnView)), help: "query documents", counter: opQuery, access: onColl(auth.ActFind)},
		"getMore":       {handler: h.getMore, help: "next batch of a cursor", counter: opGetMore, access: onColl(auth.ActFind)},
		"killCursors":   {handler: h.killCursors, help: "close cursors", internal: true, access: onColl(auth.ActKillCursors)},
		"update":        {handler: h.onViews(h.update, nil), writes: true, help: "update documents", counter: opUpdate, access: onColl(auth.ActUpdate)},
		"delete":        {handler: h.onViews(h.delete, nil), writes: true, help: "delete documents", counter: opDelete, access: onColl(auth.ActRemove)},
		"findAndModify": {handler: h.onViews(h.findAndModify, nil), writes: true, help: "update or remove one document and return it", counter: opCommand, access: findAndModifyAccess},
		"count":         {handler: h.onViews(h.count, h.countOnView), help: "count matching documents", counter: opCommand, access: onColl(auth.ActFind)},
		"aggregate":     {handler: h.aggregate, help: "aggregation pipeline (stages and expressions: see README)", counter: opCommand, access: aggregateAccess},
		"distinct":      {handler: h.onViews(h.distinct, h.distinctOnView), help: "distinct values of a field", counter: opCommand, access: onColl(auth.ActFind)},
		"explain":       {handler: h.explainOnViews(h.explain), help: "how a find, count, distinct or aggregate runs: PostgreSQL's plan; with executionStats, what running it did", access: onColl(auth.ActFind)},
		// transactions (txn.go); a statement's own command runs as usual
		"commitTransaction": {handler: h.ok, writes: true, help: "commit the session's transaction", access: anyUser},
		"abortTransaction":  {handler: h.ok, writes: true, help: "abort the session's transaction", access: anyUser},
	}
	if h.opts.TestCommands {
		t["sleep"] = &command{handler: h.sleep, help: "test command: hold a request in process for millis", access: anyUser}
	}
	for name, c := range t {
		c.name = name
	}
	maps.Copy(t, h.replCommands())
	// Commands defined elsewhere (replication's, in replset.go) get their
	// access here, so this table stays the one place that decides it.
	for name, a := range otherAccess {
		if c, ok := t[name]; ok && c.access.kind == accessRoot {
			c.access = a
		}
	}
	t["isMaster"] = t["hello"]
	t["ismaster"] = t["hello"]
	t["buildinfo"] = t["buildInfo"]
	t["findandmodify"] = t["findAndModify"]
	t["authenticate"] = &command{handler: h.authenticateX509, help: "not supported: use SCRAM (saslStart)", internal: true, access: open, name: "authenticate"}
	return t
}

// otherAccess is the access of commands whose entries are built outside
// this table. Changing replication needs clusterManager or root;
// watching it, clusterMonitor.
var otherAccess = map[string]access{
	"setReadPreference": anyUser,
	"replSetGetStatus":  onCluster(auth.ActReplSetGetStatus),
	"replSetGetConfig":  onCluster(auth.ActReplSetGetStatus),
	"replSetStepDown":   onCluster(auth.ActReplSetConfigure),
	"replSetReconfig":   onCluster(auth.ActReplSetConfigure),
	"replSetFreeze":     onCluster(auth.ActReplSetConfigure),
}

// Dispatch runs one command and always returns a reply document. It is the
// single wrapper around every handler: command lookup, opcounters, the
// request's tier and its admission, maxTimeMS, the latency histograms and
// the slow log (finish), and the mapping of errors to MongoDB codes (with
// internal errors logged, never shown).
func (h *Handlers) Dispatch(ctx context.Context, req *Request) bson.D {
	start := time.Now()
	req.arrived = start
	ctx, note := h.noteOp(ctx)
	ctx, op := h.live.begin(ctx, req, h.tableEntry(req))
	reply, err := h.runRecovered(ctx, req)
	elapsed := time.Since(start) // the monotonic clock alone
	if req.hold != nil {
		req.hold.release(start.Add(elapsed))
	}
	h.live.end(op)
	if err != nil && op.killed.Load() {
		err = interrupted() // killOp canceled it
	}
	h.finish(req, elapsed, note, err)
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

// runRecovered is run with a handler's panic turned into an InternalError
// for this request alone: the stack goes to the log, the connection and
// every other request carry on.
func (h *Handlers) runRecovered(ctx context.Context, req *Request) (reply bson.D, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("command panicked", "cmd", req.Name, "db", req.DB, "panic", p, "stack", string(debug.Stack()))
			reply, err = nil, mongoerr.New(mongoerr.InternalError, "internal error")
		}
	}()
	return h.run(ctx, req)
}

func (h *Handlers) run(ctx context.Context, req *Request) (bson.D, error) {
	req.tier, req.on = qos.Normal, storage.At(qos.Normal)
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
	if err := h.authorize(req); err != nil {
		return nil, err
	}
	tier, err := h.requestTier(req)
	if err != nil {
		return nil, err
	}
	req.tier, req.on = tier, storage.At(tier)
	setOpTier(ctx, tier)
	ctx, cancel, err := withMaxTime(ctx, req.Cmd)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if err := checkCollation(req.Cmd); err != nil {
		return nil, err
	}
	if err := checkFields(req); err != nil {
		return nil, err
	}
	if err := h.checkCommandHint(ctx, req); err != nil { // hint.go
		return nil, err
	}
	sa, err := parseSessionArgs(req)
	if err != nil {
		return nil, err
	}
	if !sa.inTxn {
		if err := checkReadConcern(req.Cmd); err != nil {
			return nil, err
		}
	}
	if err := checkSessionArgs(req, sa); err != nil {
		return nil, err
	}
	if !cmd.internal {
		// Per-user accounting of the work requests (not handshakes and
		// diagnostics): operations by tier, time waiting for admission.
		acct := h.accounts.anon
		if req.Session != nil && req.Session.acct != nil {
			acct = req.Session.acct
		}
		acct.ops[tier].Add(1)
		switch {
		case h.opts.Admission == nil:
		case sa.inTxn && !sa.startTxn:
			// A transaction is admitted once, at its first statement.
			// The rest never wait: they may hold row locks that the
			// requests they would wait behind need (see
			// docs/architecture.md, Transactions).
			defer h.opts.Admission.Enter(tier).Done()
		default:
			// Tier first (the priority channel), then the user's share
			// within the tier and delivered parallelism (the gate).
			hold := &admissionHold{h: h, tier: tier, p: fairPrincipal(req.Session), acct: acct}
			if err := hold.admit(ctx, req.arrived); err != nil {
				return nil, err
			}
			req.hold = hold // Dispatch gives it back
			ctx = context.WithValue(ctx, admissionHoldKey{}, hold)
		}
	}
	run := cmd.handler
	switch {
	case sa.inTxn:
		run = func(ctx context.Context, req *Request) (bson.D, error) {
			return h.inTransaction(ctx, req, sa, cmd.handler)
		}
	case sa.hasTxnNumber:
		run = func(ctx context.Context, req *Request) (bson.D, error) {
			return h.retryableWrite(ctx, req, sa, cmd.handler)
		}
	}
	if cmd.writes {
		return h.withWriteConcern(ctx, req, run)
	}
	return run(ctx, req)
}

// tableEntry is the table's entry for the request's command, or nil.
func (h *Handlers) tableEntry(req *Request) *command {
	if len(req.Cmd) == 0 {
		return nil
	}
	return h.table[req.Cmd[0].Key]
}

// fairPrincipal is who a request counts for in the fair share of its tier:
// the authenticated user with its weight and latency objective, else the
// client's address (one user per peer host, weight 1), so unauthenticated
// clients on different hosts are not lumped together.
func fairPrincipal(s *Session) qos.Principal {
	if s == nil {
		return qos.Principal{Weight: 1}
	}
	if s.fairName == "" || s.fairFor != s.User {
		s.fairFor, s.fairName = s.User, fairName(s)
	}
	p := qos.Principal{User: s.fairName, Weight: 1}
	if s.User != nil {
		u := s.User.User
		p.Weight, p.SLO = userWeight(u), u.SLO
	}
	return p
}

// fairName names the fair share's user of s: its authenticated user, else
// its peer host.
func fairName(s *Session) string {
	if s.User != nil {
		return s.User.User.Name.String()
	}
	host, _, err := net.SplitHostPort(s.RemoteAddr)
	if err != nil {
		host = s.RemoteAddr
	}
	return "peer " + host
}

func validateDBName(db string) error {
	if !utf8.ValidString(db) {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid database name %q: not valid UTF-8", db)
	}
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
	if !utf8.ValidString(name) {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid collection name %q: not valid UTF-8", name)
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
