package commands

import (
	"context"
	"math"
	"slices"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/query"
)

// The user and role commands (MongoDB's), on top of auth.Registry. The
// table's check covers the command's own database; these handlers add what
// it cannot see: granting a role needs grantRole on the role's database,
// and only someone who may use a tier may hand it out as a default tier.

func (h *Handlers) registry() (*auth.Registry, error) {
	if h.opts.Auth == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "users are not available in this server")
	}
	return h.opts.Auth, nil
}

// registryAndName returns the registry and the user or role (what) the
// command names: the prologue of every user and role command.
func (h *Handlers) registryAndName(req *Request, what string) (*auth.Registry, string, error) {
	reg, err := h.registry()
	if err != nil {
		return nil, "", err
	}
	name, err := nameArg(req, what)
	return reg, name, err
}

func nameArg(req *Request, what string) (string, error) {
	s, ok := req.Cmd[0].Value.(string)
	if !ok || s == "" {
		return "", mongoerr.Newf(mongoerr.BadValue, "%s needs a %s name as a non-empty string", req.Name, what)
	}
	return s, nil
}

// parseRoleNames reads roles given as "name" (in db) or {role, db}.
func parseRoleNames(v any, db, field string) ([]auth.RoleName, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, typeErr(field, "array", v)
	}
	out := make([]auth.RoleName, 0, len(arr))
	for _, e := range arr {
		switch r := e.(type) {
		case string:
			out = append(out, auth.RoleName{Role: r, DB: db})
		case bson.D:
			name, err := getString(r, "role", "")
			if err != nil {
				return nil, err
			}
			rdb, err := getString(r, "db", "")
			if err != nil {
				return nil, err
			}
			if name == "" || rdb == "" {
				return nil, mongoerr.Newf(mongoerr.BadValue, "a role in %s needs both role and db", field)
			}
			out = append(out, auth.RoleName{Role: name, DB: rdb})
		default:
			return nil, mongoerr.Newf(mongoerr.BadValue, "roles in %s are strings or {role, db} documents, not %s", field, query.TypeName(e))
		}
	}
	return out, nil
}

// parsePrivileges reads [{resource: {db, collection} | {cluster: true} |
// {anyResource: true}, actions: [..]}].
func parsePrivileges(v any) ([]auth.Privilege, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, typeErr("privileges", "array", v)
	}
	var out []auth.Privilege
	for _, e := range arr {
		d, ok := e.(bson.D)
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "each privilege is a {resource, actions} document")
		}
		res, err := getDoc(d, "resource")
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, mongoerr.New(mongoerr.BadValue, "a privilege needs a resource")
		}
		var p auth.Privilege
		cluster, _ := getBool(res, "cluster", false)
		anyRes, _ := getBool(res, "anyResource", false)
		_, hasDB := lookup(res, "db")
		_, hasColl := lookup(res, "collection")
		switch {
		case cluster && !hasDB && !hasColl && !anyRes:
			p.Resource.Cluster = true
		case anyRes && !hasDB && !hasColl && !cluster:
			p.Resource.AnyResource = true
		case hasDB && hasColl && !cluster && !anyRes:
			if p.Resource.DB, err = getString(res, "db", ""); err != nil {
				return nil, err
			}
			if p.Resource.Collection, err = getString(res, "collection", ""); err != nil {
				return nil, err
			}
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "a resource is {db: <db>, collection: <collection>} (\"\" for any), {cluster: true} or {anyResource: true}")
		}
		acts, err := getArray(d, "actions")
		if err != nil {
			return nil, err
		}
		if len(acts) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "a privilege needs at least one action")
		}
		for _, a := range acts {
			s, _ := a.(string)
			act, ok := auth.ParseAction(s)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.BadValue, "Unrecognized action privilege string: %v", a)
			}
			p.Actions |= auth.Actions(act)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkGrants: handing out roles needs grantRole (revokeRole to take them
// away) on each role's database.
func (h *Handlers) checkGrants(s *Session, roles []auth.RoleName, act auth.Action) error {
	for _, r := range roles {
		if !h.may(s, r.DB, auth.Actions(act)) {
			return mongoerr.Newf(mongoerr.Unauthorized, "not authorized to %s %s", act, r)
		}
	}
	return nil
}

// checkDefaultTier: a user admin may give a default tier only if it may use
// that tier itself, or administers users in admin (who can grant any role
// anyway); otherwise a database's user admin could mint gold users.
func (h *Handlers) checkDefaultTier(s *Session, t qos.Tier) error {
	if h.opts.Auth == nil || !h.opts.Auth.Required() || s == nil || s.User == nil {
		return nil
	}
	if s.User.Grants.MayUseTier(t) || s.User.Grants.Allows("admin", "", auth.Actions(auth.ActGrantRole)) {
		return nil
	}
	return mongoerr.Newf(mongoerr.Unauthorized, "not authorized to give the default tier %q", t)
}

func parseMechanisms(v any) ([]auth.Mechanism, error) {
	arr, ok := v.(bson.A)
	if !ok || len(arr) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms must be a non-empty array of \"SCRAM-SHA-256\" and/or \"SCRAM-SHA-1\"")
	}
	var out []auth.Mechanism
	for _, e := range arr {
		s, _ := e.(string)
		m, ok := auth.ParseMechanism(s)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.BadValue, "Unknown auth mechanism '%v'; tierdb offers SCRAM-SHA-256 and SCRAM-SHA-1", e)
		}
		out = append(out, m)
	}
	return out, nil
}

// userFields applies the fields createUser and updateUser share.
func (h *Handlers) userFields(req *Request, u *auth.User, creating bool) error {
	pwd, hasPwd := lookup(req.Cmd[1:], "pwd")
	mechs := auth.Mechanisms
	if v, ok := lookup(req.Cmd[1:], "mechanisms"); ok {
		m, err := parseMechanisms(v)
		if err != nil {
			return err
		}
		mechs = m
		if !hasPwd {
			// Dropping mechanisms without a new password keeps the others.
			kept := map[auth.Mechanism]auth.Credential{}
			for _, m := range mechs {
				c, ok := u.Credentials[m]
				if !ok {
					return mongoerr.Newf(mongoerr.BadValue, "mechanism %s needs the password (pwd) to be set", m)
				}
				kept[m] = c
			}
			u.Credentials = kept
		}
	}
	if digest, err := getBool(req.Cmd, "digestPassword", true); err != nil {
		return err
	} else if !digest {
		return mongoerr.New(mongoerr.BadValue, "digestPassword: false is not supported: the server derives SCRAM credentials itself")
	}
	if hasPwd {
		p, ok := pwd.(string)
		if !ok || p == "" {
			return mongoerr.New(mongoerr.BadValue, "pwd must be a non-empty string")
		}
		u.Credentials = map[auth.Mechanism]auth.Credential{}
		for _, m := range mechs {
			c, err := auth.NewCredential(m, u.Name.User, p, 0, nil)
			if err != nil {
				return err
			}
			u.Credentials[m] = c
		}
	} else if creating {
		return mongoerr.New(mongoerr.BadValue, "createUser needs a password (pwd)")
	}
	if v, ok := lookup(req.Cmd[1:], "roles"); ok {
		roles, err := parseRoleNames(v, req.DB, "roles")
		if err != nil {
			return err
		}
		added, removed := diffRoles(u.Roles, roles)
		if err := h.checkGrants(req.Session, added, auth.ActGrantRole); err != nil {
			return err
		}
		if err := h.checkGrants(req.Session, removed, auth.ActRevokeRole); err != nil {
			return err
		}
		u.Roles = roles
	} else if creating {
		return mongoerr.New(mongoerr.BadValue, "createUser needs a roles array (it may be empty)")
	}
	if v, ok := lookup(req.Cmd[1:], "customData"); ok {
		d, ok := v.(bson.D)
		if !ok {
			return typeErr("customData", "object", v)
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			return mongoerr.New(mongoerr.BadValue, "customData is not encodable")
		}
		u.CustomData = raw
	}
	if v, ok := lookup(req.Cmd[1:], "defaultTier"); ok {
		t, err := parseTier(v, "defaultTier")
		if err != nil {
			return err
		}
		if err := h.checkDefaultTier(req.Session, t); err != nil {
			return err
		}
		u.DefaultTier = t
	}
	if v, ok := lookup(req.Cmd[1:], "weight"); ok {
		w, isNum := asNumber(v)
		if !isNum || !(w > 0 && w <= 1000) { // also refuses NaN
			return mongoerr.New(mongoerr.BadValue, "weight must be a number greater than 0 and at most 1000 (default 1)")
		}
		// A weight is a share of the server, like a tier: only those who
		// configure QoS may hand it out.
		if !h.mayCluster(req.Session, auth.Actions(auth.ActSetQoSConfig)) {
			return mongoerr.New(mongoerr.Unauthorized, "setting a user's weight needs the setQoSConfig privilege (clusterManager or root)")
		}
		u.Weight = w
	}
	if v, ok := lookup(req.Cmd[1:], "slo"); ok {
		slo, err := parseSLO(v)
		if err != nil {
			return err
		}
		if !h.mayCluster(req.Session, auth.Actions(auth.ActSetQoSConfig)) {
			return mongoerr.New(mongoerr.Unauthorized, "setting a user's latency objective needs the setQoSConfig privilege (clusterManager or root)")
		}
		u.SLO = slo
	}
	return nil
}

// parseSLO reads a latency objective: {p999Ms: N} (N > 0, at most an
// hour), or {} to remove it.
func parseSLO(v any) (time.Duration, error) {
	d, ok := v.(bson.D)
	if !ok {
		return 0, mongoerr.New(mongoerr.BadValue, "slo must be an object such as {p999Ms: 20}, or {} for none")
	}
	var slo time.Duration
	for _, e := range d {
		ms, isNum := asNumber(e.Value)
		if e.Key != "p999Ms" {
			return 0, mongoerr.Newf(mongoerr.BadValue, "unknown slo field %q: tierdb keeps p99.9 objectives (p999Ms)", e.Key)
		}
		// Kept in whole microseconds (as the user is stored), so an
		// objective under 1 µs would be none.
		if !isNum || !(ms >= 0.001 && ms <= 3600_000) {
			return 0, mongoerr.New(mongoerr.BadValue, "slo.p999Ms must be a number of milliseconds from 0.001 to 3600000")
		}
		slo = time.Duration(math.Round(ms*1000)) * time.Microsecond
	}
	return slo, nil
}

// sloDoc shows a latency objective as it is set: {p999Ms} or {}.
func sloDoc(slo time.Duration) bson.D {
	if slo <= 0 {
		return bson.D{}
	}
	return bson.D{{Key: "p999Ms", Value: float64(slo) / float64(time.Millisecond)}}
}

// userWeight is the user's fair-share weight, 1 unless set.
func userWeight(u *auth.User) float64 {
	if u.Weight <= 0 {
		return 1
	}
	return u.Weight
}

func diffRoles(old, new []auth.RoleName) (added, removed []auth.RoleName) {
	has := func(rs []auth.RoleName, r auth.RoleName) bool {
		for _, x := range rs {
			if x == r {
				return true
			}
		}
		return false
	}
	for _, r := range new {
		if !has(old, r) {
			added = append(added, r)
		}
	}
	for _, r := range old {
		if !has(new, r) {
			removed = append(removed, r)
		}
	}
	return added, removed
}

// checkUserCommandFields refuses a createUser or updateUser field tierdb
// does not know (BadValue, so that a misspelt weight or slo is never
// dropped), and authentication restrictions, which it does not enforce.
func checkUserCommandFields(req *Request) error {
	for _, e := range req.Cmd[1:] {
		switch e.Key {
		case "pwd", "roles", "customData", "mechanisms", "digestPassword", "defaultTier", "weight", "slo":
		case "authenticationRestrictions":
			if a, ok := e.Value.(bson.A); !ok || len(a) > 0 {
				return mongoerr.Newf(mongoerr.NotImplemented, "%s: authenticationRestrictions are not supported by tierdb (only an empty list is accepted)", req.Name)
			}
		default:
			if !isGenericField(e.Key) {
				return mongoerr.Newf(mongoerr.BadValue, "unknown %s field %q; allowed: pwd, roles, customData, mechanisms, digestPassword, defaultTier, weight, slo", req.Name, e.Key)
			}
		}
	}
	return nil
}

func (h *Handlers) createUser(ctx context.Context, req *Request) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "user")
	if err != nil {
		return nil, err
	}
	if err := checkUserCommandFields(req); err != nil {
		return nil, err
	}
	u := &auth.User{Name: auth.UserName{User: name, DB: req.DB}, DefaultTier: qos.Normal}
	if err := h.userFields(req, u, true); err != nil {
		return nil, err
	}
	if err := reg.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	h.log.Info("user created", "user", name, "db", req.DB, "roles", len(u.Roles), "default_tier", u.DefaultTier.String())
	return bson.D{}, nil
}

func (h *Handlers) updateUser(ctx context.Context, req *Request) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "user")
	if err != nil {
		return nil, err
	}
	if err := checkUserCommandFields(req); err != nil {
		return nil, err
	}
	err = reg.UpdateUser(ctx, auth.UserName{User: name, DB: req.DB}, func(u *auth.User) error { return h.userFields(req, u, false) })
	if err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

func (h *Handlers) dropUser(ctx context.Context, req *Request) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "user")
	if err != nil {
		return nil, err
	}
	if err := reg.DropUser(ctx, auth.UserName{User: name, DB: req.DB}); err != nil {
		return nil, err
	}
	h.log.Info("user dropped", "user", name, "db", req.DB)
	if !reg.Required() {
		h.log.Warn("the last user was dropped: access control is off again; every client of this loopback listener has full access")
	}
	return bson.D{}, nil
}

// usersInfo: {usersInfo: 1 | "name" | {user, db} | [..] | {forAllDBs: true}}.
// Anyone may see themselves; others need viewUser on the user's database.
func (h *Handlers) usersInfo(_ context.Context, req *Request) (bson.D, error) {
	reg, err := h.registry()
	if err != nil {
		return nil, err
	}
	opts, err := parseUsersInfoOptions(req.Cmd)
	if err != nil {
		return nil, err
	}
	var users []*auth.Principal
	var names []auth.UserName
	all := false
	switch v := req.Cmd[0].Value.(type) {
	case bson.D:
		if forAll, _ := getBool(v, "forAllDBs", false); forAll {
			if !h.may(req.Session, "", auth.Actions(auth.ActViewUser)) {
				return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized to view users of every database")
			}
			users, all = reg.Users(""), true
			break
		}
		n, err := userNameDoc(v)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	case string:
		names = append(names, auth.UserName{User: v, DB: req.DB})
	case bson.A:
		if len(v) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "usersInfo needs at least one user name")
		}
		for _, e := range v {
			switch x := e.(type) {
			case string:
				names = append(names, auth.UserName{User: x, DB: req.DB})
			case bson.D:
				n, err := userNameDoc(x)
				if err != nil {
					return nil, err
				}
				names = append(names, n)
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "UserName must be either a string or an object")
			}
		}
	default:
		if n, ok := query.AsInt(v); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.BadValue, "UserName must be either a string or an object (or usersInfo: 1)")
		}
		if !h.may(req.Session, req.DB, auth.Actions(auth.ActViewUser)) {
			return nil, mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to view users", req.DB)
		}
		users, all = reg.Users(req.DB), true
	}
	if !all {
		seen := map[auth.UserName]bool{}
		for _, n := range names {
			self := req.Session != nil && req.Session.User != nil && req.Session.User.User.Name == n
			if !self && !h.may(req.Session, n.DB, auth.Actions(auth.ActViewUser)) {
				return nil, mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to view user %s", n.DB, n.User)
			}
			if p := reg.Lookup(n); p != nil && !seen[n] {
				seen[n] = true
				users = append(users, p)
			}
		}
	}
	// MongoDB answers in user name order, then database.
	sort.Slice(users, func(i, j int) bool {
		a, b := users[i].User.Name, users[j].User.Name
		return a.User < b.User || (a.User == b.User && a.DB < b.DB)
	})
	out := bson.A{}
	for _, p := range users {
		d := h.userInfoDoc(p, opts.privileges)
		if !opts.customData {
			d = slices.DeleteFunc(d, func(e bson.E) bool { return e.Key == "customData" })
		}
		if opts.restrictions {
			d = append(d, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
		}
		if opts.filter != nil {
			ok, err := opts.filter.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, d)
	}
	return bson.D{{Key: "users", Value: out}}, nil
}

// usersInfoOptions are usersInfo's options besides the users asked for.
type usersInfoOptions struct {
	privileges, customData, restrictions bool
	filter                               *query.Filter
}

// parseUsersInfoOptions reads showPrivileges, showCustomData,
// showAuthenticationRestrictions and filter (a $match on the answers).
// showCredentials is refused: tierdb never lets stored keys leave the
// server.
func parseUsersInfoOptions(cmd bson.D) (o usersInfoOptions, err error) {
	for _, e := range cmd[1:] {
		switch e.Key {
		case "showPrivileges":
			o.privileges, err = getBool(cmd, e.Key, false)
		case "showCustomData":
			o.customData, err = getBool(cmd, e.Key, true)
		case "showAuthenticationRestrictions":
			o.restrictions, err = getBool(cmd, e.Key, false)
		case "showCredentials":
			var show bool
			if show, err = getBool(cmd, e.Key, false); err == nil && show {
				err = mongoerr.New(mongoerr.NotImplemented, "usersInfo showCredentials is not supported: tierdb never shows stored credentials")
			}
		case "filter":
			var f bson.D
			if f, err = getDoc(cmd, e.Key); err == nil {
				o.filter, err = query.ParseFilter(f)
			}
		default:
			if !isGenericField(e.Key) {
				err = mongoerr.Newf(mongoerr.UnknownField, "BSON field 'usersInfo.%s' is an unknown field.", e.Key)
			}
		}
		if err != nil {
			return o, err
		}
	}
	if _, given := lookup(cmd[1:], "showCustomData"); !given {
		o.customData = true
	}
	return o, nil
}

func userNameDoc(d bson.D) (auth.UserName, error) {
	var n auth.UserName
	for _, e := range d {
		var dst *string
		switch e.Key {
		case "user":
			dst = &n.User
		case "db":
			dst = &n.DB
		default:
			return n, mongoerr.Newf(mongoerr.BadValue, "UserName contains an unknown field named: '%s'", e.Key)
		}
		str, ok := e.Value.(string)
		if !ok {
			return n, mongoerr.Newf(mongoerr.BadValue, "UserName must contain a string field named: %s. But, has type %s", e.Key, query.TypeName(e.Value))
		}
		*dst = str
	}
	switch {
	case n.User == "":
		return n, mongoerr.New(mongoerr.BadValue, "UserName must contain a field named: user")
	case n.DB == "":
		return n, mongoerr.New(mongoerr.BadValue, "UserName must contain a field named: db")
	}
	return n, nil
}

// userInfoDoc never includes credentials: not even the derived keys leave
// the server.
func (h *Handlers) userInfoDoc(p *auth.Principal, showPriv bool) bson.D {
	u := p.User
	mechs := bson.A{}
	for _, m := range u.Mechanisms() {
		mechs = append(mechs, m.String())
	}
	d := bson.D{{Key: "_id", Value: u.Name.String()}}
	if len(u.ID) == 16 {
		d = append(d, bson.E{Key: "userId", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u.ID}})
	}
	d = append(d, bson.D{
		{Key: "user", Value: u.Name.User},
		{Key: "db", Value: u.Name.DB},
		{Key: "roles", Value: roleNamesArray(u.Roles)},
		{Key: "mechanisms", Value: mechs},
		{Key: "defaultTier", Value: u.DefaultTier.String()},
		{Key: "weight", Value: userWeight(u)},
		{Key: "slo", Value: sloDoc(u.SLO)},
		{Key: "tiers", Value: tiersArray(p.Grants)},
	}...)
	if len(u.CustomData) > 0 {
		var cd bson.D
		if bson.Unmarshal(u.CustomData, &cd) == nil {
			d = append(d, bson.E{Key: "customData", Value: cd})
		}
	}
	if showPriv {
		d = append(d,
			bson.E{Key: "inheritedRoles", Value: roleNamesArray(h.opts.Auth.Inherited(u.Roles))},
			bson.E{Key: "inheritedPrivileges", Value: privilegesArray(h.opts.Auth.Privileges(u.Roles))})
	}
	return d
}

// tiersArray lists the tiers a user may use, most important first.
func tiersArray(g *auth.Grants) bson.A {
	out := bson.A{}
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		if g.MayUseTier(t) {
			out = append(out, t.String())
		}
	}
	return out
}

func roleNamesArray(rs []auth.RoleName) bson.A {
	out := bson.A{}
	for _, r := range rs {
		out = append(out, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
	}
	return out
}

func privilegesArray(ps []auth.Privilege) bson.A {
	out := bson.A{}
	for _, p := range ps {
		var res bson.D
		switch {
		case p.Resource.Cluster:
			res = bson.D{{Key: "cluster", Value: true}}
		case p.Resource.AnyResource:
			res = bson.D{{Key: "anyResource", Value: true}}
		default:
			res = bson.D{{Key: "db", Value: p.Resource.DB}, {Key: "collection", Value: p.Resource.Collection}}
		}
		acts := bson.A{}
		for _, a := range p.Actions.Names() {
			acts = append(acts, a)
		}
		out = append(out, bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: acts}})
	}
	return out
}

func (h *Handlers) createRole(ctx context.Context, req *Request) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "role")
	if err != nil {
		return nil, err
	}
	role := &auth.Role{Name: auth.RoleName{Role: name, DB: req.DB}}
	pv, ok := lookup(req.Cmd[1:], "privileges")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "createRole needs a privileges array (it may be empty)")
	}
	if role.Privileges, err = parsePrivileges(pv); err != nil {
		return nil, err
	}
	rv, ok := lookup(req.Cmd[1:], "roles")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "createRole needs a roles array (it may be empty)")
	}
	if role.Roles, err = parseRoleNames(rv, req.DB, "roles"); err != nil {
		return nil, err
	}
	if err := h.checkGrants(req.Session, role.Roles, auth.ActGrantRole); err != nil {
		return nil, err
	}
	if err := reg.CreateRole(ctx, role); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

func (h *Handlers) updateRole(ctx context.Context, req *Request) (bson.D, error) {
	return h.changeRole(ctx, req, func(role *auth.Role) error {
		if pv, ok := lookup(req.Cmd[1:], "privileges"); ok {
			ps, err := parsePrivileges(pv)
			if err != nil {
				return err
			}
			role.Privileges = ps
		}
		if rv, ok := lookup(req.Cmd[1:], "roles"); ok {
			rs, err := parseRoleNames(rv, req.DB, "roles")
			if err != nil {
				return err
			}
			added, removed := diffRoles(role.Roles, rs)
			if err := h.checkGrants(req.Session, added, auth.ActGrantRole); err != nil {
				return err
			}
			if err := h.checkGrants(req.Session, removed, auth.ActRevokeRole); err != nil {
				return err
			}
			role.Roles = rs
		}
		return nil
	})
}

func (h *Handlers) changeRole(ctx context.Context, req *Request, fn func(role *auth.Role) error) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "role")
	if err != nil {
		return nil, err
	}
	if err := reg.UpdateRole(ctx, auth.RoleName{Role: name, DB: req.DB}, fn); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

func (h *Handlers) dropRole(ctx context.Context, req *Request) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "role")
	if err != nil {
		return nil, err
	}
	if err := reg.DropRole(ctx, auth.RoleName{Role: name, DB: req.DB}); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

func (h *Handlers) grantPrivilegesToRole(ctx context.Context, req *Request) (bson.D, error) {
	pv, ok := lookup(req.Cmd[1:], "privileges")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "grantPrivilegesToRole needs privileges")
	}
	ps, err := parsePrivileges(pv)
	if err != nil {
		return nil, err
	}
	return h.changeRole(ctx, req, func(role *auth.Role) error {
		role.Privileges = append(role.Privileges, ps...)
		return nil
	})
}

// revokePrivilegesFromRole removes the given actions from privileges on
// the same resource; a privilege left with no action goes.
func (h *Handlers) revokePrivilegesFromRole(ctx context.Context, req *Request) (bson.D, error) {
	pv, ok := lookup(req.Cmd[1:], "privileges")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "revokePrivilegesFromRole needs privileges")
	}
	ps, err := parsePrivileges(pv)
	if err != nil {
		return nil, err
	}
	return h.changeRole(ctx, req, func(role *auth.Role) error {
		var kept []auth.Privilege
		for _, p := range role.Privileges {
			for _, r := range ps {
				if r.Resource == p.Resource {
					p.Actions &^= r.Actions
				}
			}
			if p.Actions != 0 {
				kept = append(kept, p)
			}
		}
		role.Privileges = kept
		return nil
	})
}

func (h *Handlers) grantRolesToUser(ctx context.Context, req *Request) (bson.D, error) {
	return h.changeUserRoles(ctx, req, true)
}

func (h *Handlers) revokeRolesFromUser(ctx context.Context, req *Request) (bson.D, error) {
	return h.changeUserRoles(ctx, req, false)
}

func (h *Handlers) changeUserRoles(ctx context.Context, req *Request, grant bool) (bson.D, error) {
	reg, name, err := h.registryAndName(req, "user")
	if err != nil {
		return nil, err
	}
	rv, ok := lookup(req.Cmd[1:], "roles")
	if !ok {
		return nil, mongoerr.Newf(mongoerr.BadValue, "%s needs roles", req.Name)
	}
	roles, err := parseRoleNames(rv, req.DB, "roles")
	if err != nil {
		return nil, err
	}
	act := auth.ActRevokeRole
	if grant {
		act = auth.ActGrantRole
		for _, r := range roles {
			if !reg.RoleExists(r) {
				return nil, mongoerr.Newf(mongoerr.RoleNotFound, "Could not find role: %s", r)
			}
		}
	}
	if err := h.checkGrants(req.Session, roles, act); err != nil {
		return nil, err
	}
	err = reg.UpdateUser(ctx, auth.UserName{User: name, DB: req.DB}, func(u *auth.User) error {
		if grant {
			added, _ := diffRoles(u.Roles, roles)
			u.Roles = append(u.Roles, added...)
			return nil
		}
		kept, _ := diffRoles(roles, u.Roles) // in u.Roles, not in roles
		u.Roles = kept
		return nil
	})
	if err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

// rolesInfo: {rolesInfo: 1 | "name" | {role, db} | [..], showPrivileges,
// showBuiltinRoles}. Anyone may see the roles they hold; others need
// viewRole on the role's database.
func (h *Handlers) rolesInfo(_ context.Context, req *Request) (bson.D, error) {
	reg, err := h.registry()
	if err != nil {
		return nil, err
	}
	showPriv, _ := getBool(req.Cmd, "showPrivileges", false)
	showBuiltin, _ := getBool(req.Cmd, "showBuiltinRoles", false)
	var names []auth.RoleName
	switch v := req.Cmd[0].Value.(type) {
	case string:
		names = append(names, auth.RoleName{Role: v, DB: req.DB})
	case bson.D:
		n, err := roleNameDoc(v)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	case bson.A:
		rs, err := parseRoleNames(v, req.DB, "rolesInfo")
		if err != nil {
			return nil, err
		}
		names = rs
	default:
		if _, ok := query.AsInt(v); !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "rolesInfo takes 1, a role name, {role, db} or an array of those")
		}
		if !h.may(req.Session, req.DB, auth.Actions(auth.ActViewRole)) {
			return nil, mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to view roles", req.DB)
		}
		for _, r := range reg.Roles(req.DB) {
			names = append(names, r.Name)
		}
		if showBuiltin {
			names = append(names, auth.BuiltinRoles(req.DB)...)
		}
	}
	var held map[auth.RoleName]bool
	if s := req.Session; s != nil && s.User != nil {
		held = map[auth.RoleName]bool{}
		for _, r := range reg.Inherited(s.User.User.Roles) {
			held[r] = true
		}
	}
	out := bson.A{}
	for _, n := range names {
		if !held[n] && !h.may(req.Session, n.DB, auth.Actions(auth.ActViewRole)) {
			return nil, mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to view role %s", n.DB, n.Role)
		}
		var sub []auth.RoleName
		if r, ok := reg.Role(n); ok {
			sub = r.Roles
		} else if !auth.IsBuiltin(n) {
			continue // MongoDB leaves unknown roles out
		}
		d := bson.D{
			{Key: "_id", Value: n.DB + "." + n.Role},
			{Key: "role", Value: n.Role},
			{Key: "db", Value: n.DB},
			{Key: "isBuiltin", Value: auth.IsBuiltin(n)},
			{Key: "roles", Value: roleNamesArray(sub)},
			{Key: "inheritedRoles", Value: roleNamesArray(reg.Inherited(sub))},
		}
		if showPriv {
			var own []auth.Privilege
			if r, ok := reg.Role(n); ok {
				own = r.Privileges
			} else {
				own = auth.BuiltinPrivileges(n)
			}
			d = append(d, bson.E{Key: "privileges", Value: privilegesArray(own)},
				bson.E{Key: "inheritedPrivileges", Value: privilegesArray(reg.Privileges([]auth.RoleName{n}))})
		}
		out = append(out, d)
	}
	return bson.D{{Key: "roles", Value: out}}, nil
}

func roleNameDoc(d bson.D) (auth.RoleName, error) {
	role, err := getString(d, "role", "")
	if err != nil {
		return auth.RoleName{}, err
	}
	db, err := getString(d, "db", "")
	if err != nil {
		return auth.RoleName{}, err
	}
	if role == "" || db == "" {
		return auth.RoleName{}, mongoerr.New(mongoerr.BadValue, "a role is named by {role, db}")
	}
	return auth.RoleName{Role: role, DB: db}, nil
}
