package auth

import (
	"math/bits"
	"sort"

	"tierdb/internal/qos"
)

// Action is one privilege action (MongoDB's names, plus tierdb's tier and
// QoS actions).
type Action uint8

const (
	ActFind Action = iota
	ActInsert
	ActUpdate
	ActRemove
	ActCreateCollection
	ActDropCollection
	ActCreateIndex
	ActDropIndex
	ActListCollections
	ActListIndexes
	ActDropDatabase
	ActKillCursors
	ActCollStats
	ActDBStats
	ActListDatabases
	ActServerStatus
	ActHostInfo
	ActGetCmdLineOpts
	ActGetLog
	ActInprog
	ActGetParameter
	ActQoSStatus
	ActSetQoSConfig
	ActSetCpuPools
	ActReplSetConfigure
	ActReplSetGetStatus
	ActCreateUser
	ActDropUser
	ActChangePassword
	ActChangeCustomData
	ActGrantRole
	ActRevokeRole
	ActViewUser
	ActCreateRole
	ActDropRole
	ActViewRole
	// The tier actions: holding useTierX lets a user run at tier X and at
	// every less important tier.
	ActUseTierHigh
	ActUseTierNormal
	ActUseTierLow
	// killAnySession: end other users' sessions (killAllSessions).
	ActKillAnySession
	// changeStream: open change streams (with find).
	ActChangeStream
	// collMod: change a collection's (so far: its indexes') options.
	ActCollMod
	numActions
)

var actionNames = [numActions]string{
	"find", "insert", "update", "remove", "createCollection", "dropCollection", "createIndex", "dropIndex",
	"listCollections", "listIndexes", "dropDatabase", "killCursors", "collStats", "dbStats", "listDatabases",
	"serverStatus", "hostInfo", "getCmdLineOpts", "getLog", "inprog", "getParameter", "qosStatus",
	"setQoSConfig", "setCpuPools", "replSetConfigure", "replSetGetStatus", "createUser", "dropUser",
	"changePassword", "changeCustomData", "grantRole", "revokeRole", "viewUser", "createRole", "dropRole",
	"viewRole", "useTierHigh", "useTierNormal", "useTierLow", "killAnySession",
	"changeStream", "collMod",
}

func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return "unknown"
}

// ParseAction reads an action name.
func ParseAction(s string) (Action, bool) {
	for i, n := range actionNames {
		if n == s {
			return Action(i), true
		}
	}
	return 0, false
}

// ActionSet is a set of actions, one bit each: a check is one AND.
type ActionSet uint64

// Actions builds a set.
func Actions(as ...Action) ActionSet {
	var s ActionSet
	for _, a := range as {
		s |= 1 << a
	}
	return s
}

func (s ActionSet) Has(a Action) bool { return s&(1<<a) != 0 }

// Names lists the set's actions in a stable order.
func (s ActionSet) Names() []string {
	out := make([]string, 0, bits.OnesCount64(uint64(s)))
	for a := Action(0); a < numActions; a++ {
		if s.Has(a) {
			out = append(out, a.String())
		}
	}
	sort.Strings(out)
	return out
}

// tierAction is the action that grants tier t.
func tierAction(t qos.Tier) Action {
	switch t {
	case qos.High:
		return ActUseTierHigh
	case qos.Normal:
		return ActUseTierNormal
	}
	return ActUseTierLow
}

// Cluster-only actions: they make sense on the cluster resource only.
var clusterActions = Actions(ActListDatabases, ActServerStatus, ActHostInfo, ActGetCmdLineOpts, ActGetLog,
	ActInprog, ActGetParameter, ActQoSStatus, ActSetQoSConfig, ActSetCpuPools, ActReplSetConfigure,
	ActReplSetGetStatus, ActUseTierHigh, ActUseTierNormal, ActUseTierLow, ActKillAnySession)

// Resource is what a privilege applies to: the cluster, every resource, or
// a namespace pattern where "" is a wildcard ({db: "", collection: ""} is
// every collection of every database, MongoDB's convention).
type Resource struct {
	Cluster     bool
	AnyResource bool
	DB          string
	Collection  string
}

// Privilege is a set of actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  ActionSet
}

// Grants are a user's privileges resolved for checking: every role
// flattened, every resource pattern in the map that answers it.
type Grants struct {
	Root       bool
	Cluster    ActionSet
	AnyDB      ActionSet                       // every collection of every database
	DBs        map[string]ActionSet            // every collection of one database
	Colls      map[string]map[string]ActionSet // db → collection
	AnyDBColls map[string]ActionSet            // a collection name in every database
	// BestTier is the most important tier the user may use.
	BestTier qos.Tier
}

func newGrants() *Grants {
	return &Grants{DBs: map[string]ActionSet{}, Colls: map[string]map[string]ActionSet{}, AnyDBColls: map[string]ActionSet{}, BestTier: qos.Low}
}

func (g *Grants) add(p Privilege) {
	r := p.Resource
	switch {
	case r.AnyResource:
		g.Cluster |= p.Actions
		g.AnyDB |= p.Actions
	case r.Cluster:
		g.Cluster |= p.Actions
	case r.DB == "" && r.Collection == "":
		g.AnyDB |= p.Actions
	case r.Collection == "":
		g.DBs[r.DB] |= p.Actions
	case r.DB == "":
		g.AnyDBColls[r.Collection] |= p.Actions
	default:
		m := g.Colls[r.DB]
		if m == nil {
			m = map[string]ActionSet{}
			g.Colls[r.DB] = m
		}
		m[r.Collection] |= p.Actions
	}
}

// Allows reports whether the grants hold every action of need on the
// collection coll of database db (coll "" for the database itself).
func (g *Grants) Allows(db, coll string, need ActionSet) bool {
	if g.Root {
		return true
	}
	have := g.AnyDB | g.DBs[db]
	if have&need == need {
		return true
	}
	if coll == "" {
		return false
	}
	have |= g.AnyDBColls[coll]
	if m := g.Colls[db]; m != nil {
		have |= m[coll]
	}
	return have&need == need
}

// AllowsCluster reports whether the grants hold every action of need on
// the cluster.
func (g *Grants) AllowsCluster(need ActionSet) bool {
	return g.Root || g.Cluster&need == need
}

// MayUseTier reports whether the user may run requests at tier t.
func (g *Grants) MayUseTier(t qos.Tier) bool { return g.Root || t >= g.BestTier }
