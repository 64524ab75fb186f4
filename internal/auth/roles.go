package auth

import (
	"sort"

	"tierdb/internal/qos"
)

// RoleName names a role: its name and the database it is defined in.
type RoleName struct {
	Role string `bson:"role"`
	DB   string `bson:"db"`
}

func (r RoleName) String() string { return r.Role + "@" + r.DB }

// Role is a custom role.
type Role struct {
	Name       RoleName
	Privileges []Privilege
	Roles      []RoleName
}

var (
	readActions      = Actions(ActFind, ActListCollections, ActListIndexes, ActKillCursors, ActCollStats, ActDBStats, ActChangeStream)
	readWriteActions = readActions | Actions(ActInsert, ActUpdate, ActRemove, ActCreateCollection, ActDropCollection, ActCreateIndex, ActDropIndex)
	dbAdminActions   = Actions(ActListCollections, ActListIndexes, ActCollStats, ActDBStats, ActCreateCollection,
		ActDropCollection, ActCreateIndex, ActDropIndex, ActDropDatabase, ActKillCursors, ActCollMod)
	userAdminActions = Actions(ActCreateUser, ActDropUser, ActChangePassword, ActChangeCustomData, ActGrantRole,
		ActRevokeRole, ActViewUser, ActCreateRole, ActDropRole, ActViewRole)
	monitorActions = Actions(ActServerStatus, ActHostInfo, ActGetCmdLineOpts, ActGetLog, ActInprog, ActGetParameter,
		ActListDatabases, ActQoSStatus, ActReplSetGetStatus)
	managerActions = monitorActions | Actions(ActSetQoSConfig, ActSetCpuPools, ActReplSetConfigure,
		ActUseTierHigh, ActUseTierNormal, ActUseTierLow, ActKillAnySession)
)

// builtinDBRoles exist in every database and apply to it.
var builtinDBRoles = map[string]ActionSet{
	"read":      readActions,
	"readWrite": readWriteActions,
	"dbAdmin":   dbAdminActions,
	"userAdmin": userAdminActions,
	"dbOwner":   readWriteActions | dbAdminActions | userAdminActions,
}

// builtinAdminRoles exist only in the admin database.
var builtinAdminRoles = map[string][]Privilege{
	"clusterMonitor": {{Resource{Cluster: true}, monitorActions}},
	// clusterManager changes QoS configuration, CPU pools and replication,
	// so it may also use every tier.
	"clusterManager":       {{Resource{Cluster: true}, managerActions}},
	"readAnyDatabase":      {{Resource{}, readActions}, {Resource{Cluster: true}, Actions(ActListDatabases)}},
	"readWriteAnyDatabase": {{Resource{}, readWriteActions}, {Resource{Cluster: true}, Actions(ActListDatabases)}},
	"userAdminAnyDatabase": {{Resource{}, userAdminActions}, {Resource{Cluster: true}, Actions(ActListDatabases)}},
	"dbAdminAnyDatabase":   {{Resource{}, dbAdminActions}, {Resource{Cluster: true}, Actions(ActListDatabases)}},
	// The tier roles: grant them beside a data role to let a user run at a
	// tier (and below).
	"tierHigh":   {{Resource{Cluster: true}, Actions(ActUseTierHigh)}},
	"tierNormal": {{Resource{Cluster: true}, Actions(ActUseTierNormal)}},
	"tierLow":    {{Resource{Cluster: true}, Actions(ActUseTierLow)}},
	"root":       nil, // every action on every resource: Grants.Root
}

// IsBuiltin reports whether r names a built-in role.
func IsBuiltin(r RoleName) bool {
	if _, ok := builtinDBRoles[r.Role]; ok {
		return true
	}
	_, ok := builtinAdminRoles[r.Role]
	return ok && r.DB == "admin"
}

// BuiltinPrivileges returns a built-in role's privileges (root has none
// listed: it has every action on every resource).
func BuiltinPrivileges(r RoleName) []Privilege {
	if as, ok := builtinDBRoles[r.Role]; ok {
		return []Privilege{{Resource{DB: r.DB}, as}}
	}
	if r.DB == "admin" {
		if r.Role == "root" {
			return []Privilege{{Resource{AnyResource: true}, ^ActionSet(0) >> (64 - numActions)}}
		}
		return builtinAdminRoles[r.Role]
	}
	return nil
}

// BuiltinRoles lists the built-in roles of database db, sorted.
func BuiltinRoles(db string) []RoleName {
	var out []RoleName
	for n := range builtinDBRoles {
		out = append(out, RoleName{n, db})
	}
	if db == "admin" {
		for n := range builtinAdminRoles {
			out = append(out, RoleName{n, db})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Role < out[j].Role })
	return out
}

// resolve flattens roles (built-in or custom, recursively; cycles are cut)
// into grants. defaultTier is a tier the user holds by definition.
func resolve(roles []RoleName, custom map[RoleName]*Role, defaultTier qos.Tier) *Grants {
	g := newGrants()
	seen := map[RoleName]bool{}
	var walk func(r RoleName)
	walk = func(r RoleName) {
		if seen[r] {
			return
		}
		seen[r] = true
		if IsBuiltin(r) {
			if r.Role == "root" && r.DB == "admin" {
				g.Root = true
				return
			}
			for _, p := range BuiltinPrivileges(r) {
				g.add(p)
			}
			return
		}
		cr, ok := custom[r]
		if !ok {
			return // a dangling name grants nothing
		}
		for _, p := range cr.Privileges {
			g.add(p)
		}
		for _, sub := range cr.Roles {
			walk(sub)
		}
	}
	for _, r := range roles {
		walk(r)
	}
	g.BestTier = defaultTier
	for t := qos.High; t < qos.NumTiers; t++ {
		if g.Cluster.Has(tierAction(t)) && t < g.BestTier {
			g.BestTier = t
		}
	}
	if g.Root {
		g.BestTier = qos.High
	}
	return g
}

// inherited lists every role reachable from roles (themselves excluded),
// for rolesInfo and usersInfo.
func inherited(roles []RoleName, custom map[RoleName]*Role) []RoleName {
	seen := map[RoleName]bool{}
	var out []RoleName
	var walk func(r RoleName)
	walk = func(r RoleName) {
		if seen[r] {
			return
		}
		seen[r] = true
		out = append(out, r)
		if cr, ok := custom[r]; ok {
			for _, s := range cr.Roles {
				walk(s)
			}
		}
	}
	for _, r := range roles {
		walk(r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
