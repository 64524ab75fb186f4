package commands

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/buildinfo"
	"tierdb/internal/gctune"
	"tierdb/internal/qos"
	"tierdb/internal/wire"
)

// Version is the MongoDB version tierdb reports; drivers and tools gate
// features on it, so it names the server whose behaviour tierdb follows.
const (
	Version        = "6.0.0"
	MaxWireVersion = 17
	tierdbVersion  = buildinfo.Version
)

type opCounter int

const (
	opNone opCounter = iota
	opInsert
	opQuery
	opUpdate
	opDelete
	opGetMore
	opCommand
	numOpCounters
)

type opCounters [numOpCounters]atomic.Int64

func (o *opCounters) add(c opCounter) {
	if c == opNone {
		c = opCommand
	}
	o[c].Add(1)
}

func (h *Handlers) hello(ctx context.Context, req *Request) (bson.D, error) {
	if err := h.awaitTopologyChange(ctx, req.Cmd); err != nil {
		return nil, err
	}
	if req.Session != nil && req.Session.Client == nil {
		if c, err := getDoc(req.Cmd, "client"); err == nil && c != nil {
			req.Session.Client = c
		}
	}
	var connID int64
	if req.Session != nil {
		connID = req.Session.ID
	}
	reply := bson.D{}
	if helloOK, _ := getBool(req.Cmd, "helloOk", false); helloOK {
		reply = append(reply, bson.E{Key: "helloOk", Value: true})
	}
	primaryKey := "isWritablePrimary"
	if req.Name != "hello" {
		primaryKey = "ismaster"
	}
	reply = append(reply,
		bson.E{Key: primaryKey, Value: true},
		// tierdb routes every request to a PostgreSQL node as mongos routes
		// to shards; answering as one makes drivers send $readPreference
		// with each read instead of assuming a single server.
		bson.E{Key: "msg", Value: "isdbgrid"},
		bson.E{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: h.processID}, {Key: "counter", Value: int64(0)}}},
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(100000)},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: h.sessionTimeoutMinutes()},
		bson.E{Key: "connectionId", Value: connID},
		bson.E{Key: "minWireVersion", Value: int32(0)},
		bson.E{Key: "maxWireVersion", Value: int32(MaxWireVersion)},
		bson.E{Key: "readOnly", Value: false},
	)
	// Authentication in the handshake: the mechanisms a user has, and the
	// first SCRAM step when the driver sends it (speculative auth).
	if mechs := h.saslSupportedMechs(req.Cmd); mechs != nil {
		reply = append(reply, bson.E{Key: "saslSupportedMechs", Value: mechs})
	}
	if spec := h.speculativeAuth(ctx, req.Session, req.Cmd); spec != nil {
		reply = append(reply, bson.E{Key: "speculativeAuthenticate", Value: spec})
	}
	return reply, nil
}

func (h *Handlers) ping(ctx context.Context, _ *Request) (bson.D, error) {
	return bson.D{}, nil
}

func (h *Handlers) buildInfo(context.Context, *Request) (bson.D, error) {
	return bson.D{
		{Key: "version", Value: Version},
		{Key: "gitVersion", Value: "tierdb-" + tierdbVersion},
		{Key: "versionArray", Value: bson.A{int32(6), int32(0), int32(0), int32(0)}},
		{Key: "tierdbVersion", Value: tierdbVersion},
		{Key: "bits", Value: int32(64)},
		{Key: "debug", Value: false},
		{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		{Key: "storageEngines", Value: bson.A{"postgresql"}},
		{Key: "javascriptEngine", Value: "none"},
		{Key: "modules", Value: bson.A{}},
	}, nil
}

func (h *Handlers) connectionStatus(_ context.Context, req *Request) (bson.D, error) {
	tier := qos.Normal
	users, roles, privs := bson.A{}, bson.A{}, bson.A{}
	var tiers bson.A
	if s := req.Session; s != nil {
		if s.User != nil && h.opts.Auth != nil {
			h.refreshUser(s)
		}
		tier = s.Tier
		if p := s.User; p != nil {
			users = append(users, bson.D{{Key: "user", Value: p.User.Name.User}, {Key: "db", Value: p.User.Name.DB}})
			roles = roleNamesArray(p.User.Roles)
			privs = privilegesArray(h.opts.Auth.Privileges(p.User.Roles))
			tiers = tiersArray(p.Grants)
		}
	}
	if tiers == nil {
		tiers = bson.A{}
		if h.opts.Auth == nil || !h.opts.Auth.Required() {
			tiers = bson.A{"high", "normal", "low"}
		}
	}
	info := bson.D{
		{Key: "authenticatedUsers", Value: users},
		{Key: "authenticatedUserRoles", Value: roles},
	}
	if show, _ := getBool(req.Cmd, "showPrivileges", false); show {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: privs})
	}
	return bson.D{
		{Key: "authInfo", Value: info},
		{Key: "priority", Value: tier.String()},
		{Key: "tiers", Value: tiers},
	}, nil
}

func (h *Handlers) whatsmyuri(_ context.Context, req *Request) (bson.D, error) {
	addr := ""
	if req.Session != nil {
		addr = req.Session.RemoteAddr
	}
	return bson.D{{Key: "you", Value: addr}}, nil
}

func (h *Handlers) serverStatus(context.Context, *Request) (bson.D, error) {
	var cur, total int64
	if h.opts.Connections != nil {
		cur, total = h.opts.Connections()
	}
	uptime := time.Since(h.started)
	return bson.D{
		{Key: "host", Value: hostname()},
		{Key: "version", Value: Version},
		{Key: "process", Value: "tierdb"},
		{Key: "pid", Value: int64(os.Getpid())},
		{Key: "uptime", Value: float64(int64(uptime.Seconds()))},
		{Key: "uptimeMillis", Value: uptime.Milliseconds()},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		{Key: "connections", Value: bson.D{
			{Key: "current", Value: int32(cur)},
			{Key: "available", Value: int32(1_000_000 - cur)},
			{Key: "totalCreated", Value: total},
		}},
		{Key: "opcounters", Value: bson.D{
			{Key: "insert", Value: h.ops[opInsert].Load()},
			{Key: "query", Value: h.ops[opQuery].Load()},
			{Key: "update", Value: h.ops[opUpdate].Load()},
			{Key: "delete", Value: h.ops[opDelete].Load()},
			{Key: "getmore", Value: h.ops[opGetMore].Load()},
			{Key: "command", Value: h.ops[opCommand].Load()},
		}},
		{Key: "repl", Value: h.replStatus()},
		{Key: "transactions", Value: h.txnStats.status()},
		{Key: "logicalSessionRecordCache", Value: bson.D{{Key: "activeSessionsCount", Value: int32(h.sessions.Len())}}},
		{Key: "tierdb", Value: bson.D{{Key: "backends", Value: h.backendStats()}, {Key: "versionCache", Value: h.versionCacheStats()}, {Key: "asyncCommits", Value: h.store.AsyncCommits()}, {Key: "changeStreams", Value: h.changeStreamStats()}, {Key: "gc", Value: gcStatus(h.opts.GC.Status())}}},
		{Key: "metrics", Value: bson.D{{Key: "cursor", Value: bson.D{
			{Key: "open", Value: bson.D{{Key: "total", Value: int64(h.cursors.len())}}},
			{Key: "timedOut", Value: h.cursors.timedOut.Load()},
		}}, {Key: "ttl", Value: bson.D{
			{Key: "deletedDocuments", Value: h.ttl.deleted.Load()},
			{Key: "passes", Value: h.ttl.passes.Load()},
		}}}},
	}, nil
}

// gcStatus reports how Go's collector is paced (internal/gctune).
func gcStatus(st gctune.Status) bson.D {
	return bson.D{
		{Key: "paced", Value: st.Paced},
		{Key: "gogc", Value: int32(st.Percent)},
		{Key: "headroomMiB", Value: st.HeadroomMiB},
		{Key: "deferredForHighTier", Value: st.Deferring},
		{Key: "deferrals", Value: st.Deferrals},
	}
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func (h *Handlers) hostInfo(context.Context, *Request) (bson.D, error) {
	var memMB int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, line := range strings.Split(string(b), "\n") {
			if n, _ := fmt.Sscanf(line, "MemTotal: %d kB", &kb); n == 1 {
				memMB = kb / 1024
			}
		}
	}
	return bson.D{
		{Key: "system", Value: bson.D{
			{Key: "currentTime", Value: bson.NewDateTimeFromTime(time.Now())},
			{Key: "hostname", Value: hostname()},
			{Key: "cpuAddrSize", Value: int32(64)},
			{Key: "memSizeMB", Value: memMB},
			{Key: "numCores", Value: int32(runtime.NumCPU())},
			{Key: "cpuArch", Value: runtime.GOARCH},
		}},
		{Key: "os", Value: bson.D{{Key: "type", Value: runtime.GOOS}, {Key: "name", Value: runtime.GOOS}}},
		{Key: "extra", Value: bson.D{}},
	}, nil
}

func (h *Handlers) getCmdLineOpts(context.Context, *Request) (bson.D, error) {
	argv := bson.A{}
	for _, a := range h.opts.Argv {
		argv = append(argv, a)
	}
	return bson.D{{Key: "argv", Value: argv}, {Key: "parsed", Value: bson.D{}}}, nil
}

// getLog answers with empty logs: tierdb logs to stderr and keeps no ring buffer.
func (h *Handlers) getLog(_ context.Context, req *Request) (bson.D, error) {
	if req.Cmd[0].Value == "*" {
		return bson.D{{Key: "names", Value: bson.A{"global", "startupWarnings"}}}, nil
	}
	return bson.D{{Key: "totalLinesWritten", Value: int32(0)}, {Key: "log", Value: bson.A{}}}, nil
}

func (h *Handlers) listCommands(context.Context, *Request) (bson.D, error) {
	names := make([]string, 0, len(h.table))
	for n := range h.table {
		names = append(names, n)
	}
	sort.Strings(names)
	cmds := bson.D{}
	for _, n := range names {
		cmds = append(cmds, bson.E{Key: n, Value: bson.D{{Key: "help", Value: h.table[n].help}}})
	}
	return bson.D{{Key: "commands", Value: cmds}}, nil
}

func (h *Handlers) freeMonitoring(context.Context, *Request) (bson.D, error) {
	return bson.D{{Key: "state", Value: "disabled"}}, nil
}

// backendStats reports each tier's PostgreSQL backends: in use and open.
func (h *Handlers) backendStats() bson.D {
	out := bson.D{}
	for t, st := range h.store.PoolStats() {
		out = append(out, bson.E{Key: qos.Tier(t).String(), Value: bson.D{
			{Key: "inUse", Value: st[0]},
			{Key: "open", Value: st[1]},
			{Key: "pids", Value: len(h.store.BackendPIDs(qos.Tier(t)))},
		}})
	}
	return out
}

// sleep is a test command: it occupies a request slot, at the caller's tier,
// for millis milliseconds (or until the client goes away).
func (h *Handlers) sleep(ctx context.Context, req *Request) (bson.D, error) {
	ms, err := getInt(req.Cmd, "millis", 100)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return bson.D{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// awaitTopologyChange implements the awaitable hello of the server discovery
// spec: a monitor that sends our current topologyVersion with maxAwaitTimeMS
// wants an answer only when something changes or the time is up. The
// topology of a single tierdb never changes, so it just waits; answering at
// once would make every driver's monitor spin.
func (h *Handlers) awaitTopologyChange(ctx context.Context, cmd bson.D) error {
	tv, err := getDoc(cmd, "topologyVersion")
	if err != nil || tv == nil {
		return err
	}
	ms, err := getInt(cmd, "maxAwaitTimeMS", 0)
	if err != nil || ms <= 0 {
		return err
	}
	if pid, _ := lookup(tv, "processId"); pid != h.processID {
		return nil // another process's version: answer at once
	}
	t := time.NewTimer(time.Duration(min(ms, 60_000)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

func (h *Handlers) versionCacheStats() bson.D {
	hits, misses, entries, bytes := h.store.VersionCacheStats()
	return bson.D{{Key: "hits", Value: hits}, {Key: "misses", Value: misses}, {Key: "entries", Value: int64(entries)}, {Key: "bytes", Value: int64(bytes)}}
}
