package commands

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

// accessKind is what a command-table entry requires of the caller.
type accessKind uint8

const (
	// accessRoot is the zero value: an entry that declares nothing needs
	// root, so a command added without thought is closed, not open.
	accessRoot accessKind = iota
	// accessOpen: also before authentication (handshake, auth, ping).
	accessOpen
	// accessAnyUser: any authenticated user; the handler may check more.
	accessAnyUser
	accessCluster    // actions on the cluster resource
	accessDB         // actions on the command's database
	accessCollection // actions on the collection the command names
)

type access struct {
	kind    accessKind
	actions auth.ActionSet
	// actionsFor, when set, chooses the actions from the command (a
	// findAndModify that removes needs remove, not update).
	actionsFor func(cmd bson.D) auth.ActionSet
}

var (
	open    = access{kind: accessOpen}
	anyUser = access{kind: accessAnyUser}
)

func onCluster(a ...auth.Action) access {
	return access{kind: accessCluster, actions: auth.Actions(a...)}
}
func onDB(a ...auth.Action) access { return access{kind: accessDB, actions: auth.Actions(a...)} }
func onColl(a ...auth.Action) access {
	return access{kind: accessCollection, actions: auth.Actions(a...)}
}

var findAndModifyAccess = access{kind: accessCollection, actionsFor: func(cmd bson.D) auth.ActionSet {
	if rm, _ := getBool(cmd, "remove", false); rm {
		return auth.Actions(auth.ActFind, auth.ActRemove)
	}
	if up, _ := getBool(cmd, "upsert", false); up {
		return auth.Actions(auth.ActFind, auth.ActUpdate, auth.ActInsert)
	}
	return auth.Actions(auth.ActFind, auth.ActUpdate)
}}

// authorize is the one access check, run by the Dispatch wrapper before
// every handler. While no user exists (and --auth is not given) tierdb
// listens on loopback only and lets everyone in; afterwards an
// unauthenticated connection may only run the open commands, and every
// other command needs the privileges its table entry names, on its
// database and collection. The cost when authenticated: one atomic load to
// see whether users or roles changed, then a map lookup or two.
func (h *Handlers) authorize(req *Request) error {
	reg := h.opts.Auth
	a := req.cmd.access
	if reg == nil || a.kind == accessOpen {
		return nil
	}
	s := req.Session
	var p *auth.Principal
	if s != nil && s.User != nil {
		p = h.refreshUser(s)
	}
	if p == nil {
		if !reg.Required() {
			return nil
		}
		// The localhost exception: with authentication required and no
		// user yet, a loopback client may create the first user, in admin.
		if s != nil && s.Loopback && req.Name == "createUser" && req.DB == "admin" && !reg.HasUsers() {
			return nil
		}
		return mongoerr.Newf(mongoerr.Unauthorized, "command %s requires authentication", req.Name)
	}
	g := p.Grants
	need := a.actions
	if a.actionsFor != nil {
		need = a.actionsFor(req.Cmd)
	}
	ok := false
	switch a.kind {
	case accessAnyUser:
		ok = true
	case accessCluster:
		ok = g.AllowsCluster(need)
	case accessDB:
		ok = g.Allows(req.DB, "", need)
	case accessCollection:
		ok = g.Allows(req.DB, commandCollection(req), need)
	default:
		ok = g.Root
	}
	if !ok {
		// MongoDB's wording, naming the target but never echoing the
		// command's arguments (a createUser carries a password).
		if coll := commandCollection(req); a.kind == accessCollection && coll != "" {
			return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to execute command { %s: %q }", req.DB, req.Name, coll)
		}
		return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to execute command { %s }", req.DB, req.Name)
	}
	return nil
}

// refreshUser brings the session's principal up to date after a change to
// users or roles: a dropped user is logged out, and a tier the user may no
// longer use falls back to the best one still held.
func (h *Handlers) refreshUser(s *Session) *auth.Principal {
	p := h.opts.Auth.Fresh(s.User)
	if p == s.User {
		return p
	}
	s.User = p
	if p == nil {
		s.acct, s.Tier = nil, qos.Normal
		return nil
	}
	if !p.Grants.MayUseTier(s.Tier) {
		s.Tier = p.Grants.BestTier
	}
	return p
}

// commandCollection is the collection a command acts on; "" when it names
// none (then only database-wide privileges apply).
func commandCollection(req *Request) string {
	v := req.Cmd[0].Value
	switch req.Name {
	case "getMore":
		v, _ = lookup(req.Cmd[1:], "collection")
	case "explain":
		if d, ok := v.(bson.D); ok && len(d) > 0 {
			v = d[0].Value
		}
	}
	s, _ := v.(string)
	return s
}

// may reports whether the session's user (if access control is on) holds
// need on db; handlers use it for what the table cannot see (the roles a
// grant names live in other databases).
func (h *Handlers) may(s *Session, db string, need auth.ActionSet) bool {
	if h.opts.Auth == nil || !h.opts.Auth.Required() {
		return true
	}
	if s == nil || s.User == nil {
		// Only the localhost exception gets here unauthenticated.
		return s != nil && s.Loopback && !h.opts.Auth.HasUsers()
	}
	return s.User.Grants.Allows(db, "", need)
}

func (h *Handlers) mayCluster(s *Session, need auth.ActionSet) bool {
	if h.opts.Auth == nil || !h.opts.Auth.Required() {
		return true
	}
	return s != nil && s.User != nil && s.User.Grants.AllowsCluster(need)
}

// saslConv is a conversation in progress on a connection.
type saslConv struct {
	id   int32
	conv *auth.Conversation
	db   string
	mech auth.Mechanism
}

func (h *Handlers) saslStart(ctx context.Context, req *Request) (bson.D, error) {
	mech, err := getString(req.Cmd, "mechanism", "")
	if err != nil {
		return nil, err
	}
	payload, err := saslPayload(req.Cmd)
	if err != nil {
		return nil, err
	}
	opts, err := getDoc(req.Cmd, "options")
	if err != nil {
		return nil, err
	}
	skip, _ := getBool(opts, "skipEmptyExchange", false)
	return h.startSASL(ctx, req.Session, req.DB, mech, payload, skip, false)
}

// startSASL begins a conversation (from saslStart or a hello's
// speculativeAuthenticate) and answers the client's first message.
func (h *Handlers) startSASL(ctx context.Context, s *Session, db, mechName string, payload []byte, skip, speculative bool) (bson.D, error) {
	reg := h.opts.Auth
	if reg == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "authentication is not configured in this server")
	}
	if s == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "authentication needs a client connection")
	}
	mech, ok := auth.ParseMechanism(mechName)
	if !ok {
		h.authStats.unknownMech.Add(1)
		return nil, &auth.Error{Kind: auth.KindMechanism, Msg: "Received authentication for mechanism " + mechName + " which is not enabled; use SCRAM-SHA-256 or SCRAM-SHA-1"}
	}
	ms := h.authStats.of(mech)
	ms.received.Add(1)
	if speculative {
		ms.specReceived.Add(1)
	}
	// Another tierdb on the same PostgreSQL may have changed users: read
	// them again (cheap, unchanged data keeps the cache) once per
	// authentication, never per request.
	if err := reg.Load(ctx); err != nil {
		h.log.Warn("reloading users failed; using the cached copy", "err", err)
	}
	s.sasl = nil
	conv := auth.NewConversation(auth.ConversationOptions{
		Mechanism: mech,
		Lookup: func(user string) (auth.Credential, bool) {
			return reg.Credential(auth.UserName{User: user, DB: db}, mech)
		},
		Secret:            reg.Secret(),
		SkipEmptyExchange: skip,
	})
	out, _, err := conv.Step(payload)
	if err != nil {
		h.authFailed(s, db, mech, conv.User(), err)
		return nil, err
	}
	// A throttled user or address is refused here, as a wrong password
	// would be, without a conversation. (A speculative start is let
	// through: its proof is refused at saslContinue, counted once.)
	if !speculative {
		if v := reg.Throttle().Check(auth.UserName{User: conv.User(), DB: db}.String(), peerKey(s)); v.Throttled {
			return nil, h.authThrottled(s, db, mech, conv.User(), v)
		}
	}
	s.convID++
	s.sasl = &saslConv{id: s.convID, conv: conv, db: db, mech: mech}
	return bson.D{
		{Key: "conversationId", Value: s.convID},
		{Key: "done", Value: false},
		{Key: "payload", Value: bson.Binary{Data: out}},
	}, nil
}

func (h *Handlers) saslContinue(_ context.Context, req *Request) (bson.D, error) {
	s := req.Session
	id, err := getInt(req.Cmd, "conversationId", -1)
	if err != nil {
		return nil, err
	}
	payload, err := saslPayload(req.Cmd)
	if err != nil {
		return nil, err
	}
	if s == nil || s.sasl == nil || int64(s.sasl.id) != id || s.sasl.db != req.DB {
		if s != nil {
			s.sasl = nil
		}
		return nil, &auth.Error{Kind: auth.KindNoConversation, Msg: "No SASL session state found"}
	}
	sc := s.sasl
	wasProven := sc.conv.Authenticated()
	// The step that checks the proof is reserved with the throttle first,
	// so that conversations running at once cannot get more guesses past
	// it than the failures allowed.
	var attempt *auth.Attempt
	if !wasProven {
		a, v := h.throttle().Begin(auth.UserName{User: sc.conv.User(), DB: sc.db}.String(), peerKey(s))
		if v.Throttled {
			s.sasl = nil
			return nil, h.authThrottled(s, sc.db, sc.mech, sc.conv.User(), v)
		}
		attempt = a
	}
	out, done, err := sc.conv.Step(payload)
	if err != nil {
		s.sasl = nil
		h.settleAttempt(s, attempt, failureOutcome(err))
		h.authFailed(s, sc.db, sc.mech, sc.conv.User(), err)
		return nil, err
	}
	if done {
		s.sasl = nil
	}
	if sc.conv.Authenticated() && !wasProven {
		if err := h.authenticated(s, sc); err != nil {
			s.sasl = nil
			h.settleAttempt(s, attempt, auth.Failed)
			return nil, err
		}
		h.settleAttempt(s, attempt, auth.Succeeded)
	}
	h.settleAttempt(s, attempt, auth.Released) // a no-op once settled
	return bson.D{
		{Key: "conversationId", Value: sc.id},
		{Key: "done", Value: done},
		{Key: "payload", Value: bson.Binary{Data: out}},
	}, nil
}

// authenticated binds the user to the connection and applies the user's
// default tier.
func (h *Handlers) authenticated(s *Session, sc *saslConv) error {
	name := auth.UserName{User: sc.conv.User(), DB: sc.db}
	p := h.opts.Auth.Lookup(name)
	if p == nil { // dropped between the two messages
		err := &auth.Error{Kind: auth.KindFailed, Msg: auth.FailedMsg, Reason: "user dropped during authentication"}
		h.authFailed(s, sc.db, sc.mech, name.User, err)
		return err
	}
	s.User = p
	s.Tier = p.User.DefaultTier
	s.acct = h.accounts.get(name)
	h.authStats.of(sc.mech).successful.Add(1)
	h.log.Info("authenticated", "conn", s.ID, "user", name.User, "db", name.DB, "mechanism", sc.mech.String(), "tier", s.Tier.String())
	return nil
}

// authFailed counts and logs a failed authentication: who, from where, by
// which mechanism and why, never a password (SCRAM never sends one).
func (h *Handlers) authFailed(s *Session, db string, mech auth.Mechanism, user string, err error) {
	h.authStats.of(mech).failed.Add(1)
	h.authStats.failed.Add(1)
	remote := ""
	if s != nil {
		remote = s.RemoteAddr
	}
	h.log.Warn("authentication failed", "user", user, "db", db, "mechanism", mech.String(), "remote", remote, "reason", err.Error())
}

// throttle is the authentication throttle; nil (refuses nothing) when
// throttling or access control is off.
func (h *Handlers) throttle() *auth.Throttle {
	if h.opts.Auth == nil {
		return nil
	}
	return h.opts.Auth.Throttle()
}

// authThrottled answers an attempt the throttle refused: exactly as a
// wrong password, so the client learns nothing. It is logged at debug
// level only (an attacker can make thousands a second); the lockout that
// started it was logged as a warning, and refusals are counted.
func (h *Handlers) authThrottled(s *Session, db string, mech auth.Mechanism, user string, v auth.Verdict) error {
	remote := ""
	if s != nil {
		remote = s.RemoteAddr
	}
	h.log.Debug("authentication refused: throttled", "user", user, "db", db, "mechanism", mech.String(), "remote", remote,
		"by", string(v.By), "until", v.Until)
	return &auth.Error{Kind: auth.KindFailed, Msg: auth.FailedMsg, Reason: "throttled by " + string(v.By)}
}

// settleAttempt tells the throttle how a reserved attempt ended and logs
// the throttling it starts: who, from where, for how long, never a
// password.
func (h *Handlers) settleAttempt(s *Session, a *auth.Attempt, o auth.Outcome) {
	for _, l := range a.Done(o) {
		remote := ""
		if s != nil {
			remote = s.RemoteAddr
		}
		h.log.Warn("authentication throttled after repeated failures", "by", string(l.By), "key", l.Key,
			"failures", l.Failures, "for", l.For.String(), "remote", remote)
	}
}

// failureOutcome: a failed proof counts against the user and the address;
// a malformed message is no password guess.
func failureOutcome(err error) auth.Outcome {
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Kind == auth.KindFailed {
		return auth.Failed
	}
	return auth.Released
}

// peerKey is the client address failures are counted against: the host
// without the port (each connection has its own), and for IPv6 its /64,
// which one client usually holds whole.
func peerKey(s *Session) string {
	if s == nil || s.RemoteAddr == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(s.RemoteAddr)
	if err != nil {
		host = s.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// saslPayload reads the payload, binary (drivers) or a string (some shells).
func saslPayload(cmd bson.D) ([]byte, error) {
	v, ok := lookup(cmd, "payload")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "missing payload field")
	}
	switch p := v.(type) {
	case bson.Binary:
		return p.Data, nil
	case string:
		return []byte(p), nil
	}
	return nil, typeErr("payload", "binData", v)
}

// speculativeAuth answers a hello's speculativeAuthenticate: the first
// SCRAM step inside the handshake, saving a round trip. Any failure just
// leaves it out of the reply: the driver then authenticates normally and
// gets the error there.
func (h *Handlers) speculativeAuth(ctx context.Context, s *Session, cmd bson.D) bson.D {
	spec, err := getDoc(cmd, "speculativeAuthenticate")
	if err != nil || spec == nil || h.opts.Auth == nil {
		return nil
	}
	mech, _ := getString(spec, "mechanism", "")
	db, _ := getString(spec, "db", "")
	payload, err := saslPayload(spec)
	if err != nil || db == "" {
		return nil
	}
	// A user who exists without this mechanism's credential (a SCRAM-SHA-1
	// only user, when drivers speculate with SCRAM-SHA-256): leave the
	// speculation out, so the driver picks a mechanism from
	// saslSupportedMechs. An unknown user still gets the decoy exchange,
	// so the reply does not tell who exists.
	if m, ok := auth.ParseMechanism(mech); ok {
		if cf, err := auth.ParseClientFirst(payload); err == nil {
			name := auth.UserName{User: cf.User, DB: db}
			if _, has := h.opts.Auth.Credential(name, m); !has && h.opts.Auth.Lookup(name) != nil {
				return nil
			}
		}
	}
	opts, _ := getDoc(spec, "options")
	skip, _ := getBool(opts, "skipEmptyExchange", false)
	reply, err := h.startSASL(ctx, s, db, mech, payload, skip, true)
	if err != nil {
		return nil
	}
	return reply
}

// saslSupportedMechs answers hello's saslSupportedMechs: "db.user". An
// unknown user gets both mechanisms, like a user who has both, so the
// handshake does not tell who exists.
func (h *Handlers) saslSupportedMechs(cmd bson.D) bson.A {
	v, _ := getString(cmd, "saslSupportedMechs", "")
	if v == "" || h.opts.Auth == nil {
		return nil
	}
	db, user, ok := cutDot(v)
	mechs := auth.Mechanisms
	if ok {
		if p := h.opts.Auth.Lookup(auth.UserName{User: user, DB: db}); p != nil {
			mechs = p.User.Mechanisms()
		}
	}
	out := bson.A{}
	for _, m := range mechs {
		out = append(out, m.String())
	}
	return out
}

func cutDot(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func (h *Handlers) logout(_ context.Context, req *Request) (bson.D, error) {
	if s := req.Session; s != nil {
		s.User, s.sasl, s.acct, s.Tier = nil, nil, nil, qos.Normal
	}
	return bson.D{}, nil
}

// authenticateX509 answers the legacy authenticate command (MONGODB-CR,
// MONGODB-X509), which tierdb does not offer.
func (h *Handlers) authenticateX509(context.Context, *Request) (bson.D, error) {
	return nil, &auth.Error{Kind: auth.KindMechanism, Msg: "only SCRAM-SHA-256 and SCRAM-SHA-1 are supported (saslStart)"}
}

// authStats counts authentications for serverStatus and /metrics.
type authStats struct {
	sha1, sha256 mechStats
	failed       atomic.Int64
	unknownMech  atomic.Int64
}

type mechStats struct {
	received, successful, failed atomic.Int64
	specReceived                 atomic.Int64
}

func (a *authStats) of(m auth.Mechanism) *mechStats {
	if m == auth.SCRAMSHA1 {
		return &a.sha1
	}
	return &a.sha256
}

// serverStatusWithSecurity is serverStatus plus MongoDB's security section
// (authentications received, successful and failed, per mechanism).
func (h *Handlers) serverStatusWithSecurity(ctx context.Context, req *Request) (bson.D, error) {
	reply, err := h.serverStatus(ctx, req)
	if err != nil {
		return nil, err
	}
	mechs := bson.D{}
	for _, m := range auth.Mechanisms {
		ms := h.authStats.of(m)
		mechs = append(mechs, bson.E{Key: m.String(), Value: bson.D{
			{Key: "authenticate", Value: bson.D{{Key: "received", Value: ms.received.Load()}, {Key: "successful", Value: ms.successful.Load()}, {Key: "failed", Value: ms.failed.Load()}}},
			{Key: "speculativeAuthenticate", Value: bson.D{{Key: "received", Value: ms.specReceived.Load()}}},
		}})
	}
	required := h.opts.Auth != nil && h.opts.Auth.Required()
	return append(reply, bson.E{Key: "security", Value: bson.D{
		{Key: "authorization", Value: enabledString(required)},
		{Key: "authentication", Value: bson.D{
			{Key: "mechanisms", Value: mechs},
			{Key: "failed", Value: h.authStats.failed.Load()},
			{Key: "unsupportedMechanism", Value: h.authStats.unknownMech.Load()},
			{Key: "throttle", Value: h.throttleStatus()},
		}},
	}}), nil
}

// throttleStatus is serverStatus().security.authentication.throttle: the
// settings, attempts refused and throttlings started (by user and by
// address), and how many users and addresses are remembered.
func (h *Handlers) throttleStatus() bson.D {
	t := h.throttle()
	if t == nil {
		return bson.D{{Key: "enabled", Value: false}}
	}
	o, st := t.Options(), t.Stats()
	return bson.D{
		{Key: "enabled", Value: true},
		{Key: "userFailures", Value: int64(o.UserFailures)},
		{Key: "peerFailures", Value: int64(o.PeerFailures)},
		{Key: "windowMillis", Value: o.Window.Milliseconds()},
		{Key: "maxBackoffMillis", Value: o.MaxBackoff.Milliseconds()},
		{Key: "refused", Value: bson.D{{Key: "user", Value: st.RefusedUser}, {Key: "peer", Value: st.RefusedPeer}}},
		{Key: "throttlings", Value: bson.D{{Key: "user", Value: st.LockoutsUser}, {Key: "peer", Value: st.LockoutsPeer}}},
		{Key: "trackedUsers", Value: int64(st.TrackedUsers)},
		{Key: "trackedPeers", Value: int64(st.TrackedPeers)},
		{Key: "evicted", Value: st.Evicted},
	}
}

// userAccount is one user's figures: operations per tier and time spent
// waiting for admission. The fair-admission work builds on these.
type userAccount struct {
	user      auth.UserName
	name      string
	ops       [qos.NumTiers]atomic.Int64
	waitNanos atomic.Int64
}

// accounts holds every user's account. Sessions keep a pointer to theirs,
// so the request path touches only atomics, never the map.
type accounts struct {
	mu   sync.Mutex
	m    map[string]*userAccount
	anon *userAccount // connections that did not authenticate
}

func newAccounts() *accounts {
	return &accounts{m: map[string]*userAccount{}, anon: &userAccount{name: ""}}
}

func (a *accounts) get(user auth.UserName) *userAccount {
	name := user.String()
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.m[name]
	if u == nil {
		u = &userAccount{user: user, name: name}
		a.m[name] = u
	}
	return u
}

// list returns the accounts with any operation, the anonymous one first.
func (a *accounts) list() []*userAccount {
	a.mu.Lock()
	out := make([]*userAccount, 0, len(a.m)+1)
	for _, u := range a.m {
		out = append(out, u)
	}
	a.mu.Unlock()
	sortAccounts(out)
	if a.anon.total() > 0 {
		out = append([]*userAccount{a.anon}, out...)
	}
	return out
}

func (u *userAccount) total() int64 {
	var n int64
	for t := range u.ops {
		n += u.ops[t].Load()
	}
	return n
}

// label is the account's name in reports.
func (u *userAccount) label() string {
	if u.name == "" {
		return "(unauthenticated)"
	}
	return u.name
}

func (u *userAccount) doc() bson.D {
	ops := bson.D{}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		ops = append(ops, bson.E{Key: t.String(), Value: u.ops[t].Load()})
	}
	return bson.D{
		{Key: "user", Value: u.label()},
		{Key: "ops", Value: ops},
		{Key: "waitMicros", Value: time.Duration(u.waitNanos.Load()).Microseconds()},
	}
}

func enabledString(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}

func sortAccounts(us []*userAccount) {
	slices.SortFunc(us, func(a, b *userAccount) int { return strings.Compare(a.name, b.name) })
}
