package auth

import (
	"context"
	"errors"
	"testing"

	"tierdb/internal/qos"
)

// memStore is a Store in memory, for tests.
type memStore struct {
	users, roles map[string][]byte
}

func newMemStore() *memStore {
	return &memStore{users: map[string][]byte{}, roles: map[string][]byte{}}
}

func (m *memStore) LoadAuth(context.Context) (users, roles [][]byte, err error) {
	for _, d := range m.users {
		users = append(users, d)
	}
	for _, d := range m.roles {
		roles = append(roles, d)
	}
	return users, roles, nil
}

func (m *memStore) put(t map[string][]byte, db, name string, doc []byte, create bool) error {
	if _, ok := t[db+"."+name]; ok && create {
		return errors.New("duplicate")
	}
	t[db+"."+name] = doc
	return nil
}

func (m *memStore) del(t map[string][]byte, db, name string) (bool, error) {
	_, ok := t[db+"."+name]
	delete(t, db+"."+name)
	return ok, nil
}

func (m *memStore) PutUser(_ context.Context, db, name string, doc []byte, create bool) error {
	return m.put(m.users, db, name, doc, create)
}
func (m *memStore) PutRole(_ context.Context, db, name string, doc []byte, create bool) error {
	return m.put(m.roles, db, name, doc, create)
}
func (m *memStore) DeleteUser(_ context.Context, db, name string) (bool, error) {
	return m.del(m.users, db, name)
}
func (m *memStore) DeleteRole(_ context.Context, db, name string) (bool, error) {
	return m.del(m.roles, db, name)
}

func TestBuiltinRoleResolution(t *testing.T) {
	find, insert := Actions(ActFind), Actions(ActInsert)
	type check struct {
		db, coll string
		need     ActionSet
		want     bool
	}
	cases := []struct {
		name   string
		roles  []RoleName
		checks []check
		// cluster checks
		cluster     ActionSet
		clusterWant bool
		best        qos.Tier
	}{
		{"read on shop", []RoleName{{"read", "shop"}}, []check{
			{"shop", "orders", find, true}, {"shop", "orders", insert, false}, {"other", "orders", find, false},
			{"shop", "", Actions(ActListCollections), true},
		}, Actions(ActListDatabases), false, qos.Normal},
		{"readWrite on shop", []RoleName{{"readWrite", "shop"}}, []check{
			{"shop", "orders", find | insert, true}, {"shop", "", Actions(ActDropDatabase), false}, {"admin", "x", find, false},
		}, Actions(ActServerStatus), false, qos.Normal},
		{"dbAdmin cannot read", []RoleName{{"dbAdmin", "shop"}}, []check{
			{"shop", "orders", find, false}, {"shop", "", Actions(ActDropDatabase), true},
		}, 0, true, qos.Normal},
		{"userAdmin", []RoleName{{"userAdmin", "shop"}}, []check{
			{"shop", "", Actions(ActCreateUser, ActGrantRole), true}, {"other", "", Actions(ActCreateUser), false},
		}, 0, true, qos.Normal},
		{"readAnyDatabase", []RoleName{{"readAnyDatabase", "admin"}}, []check{
			{"a", "b", find, true}, {"c", "d", insert, false},
		}, Actions(ActListDatabases), true, qos.Normal},
		{"readAnyDatabase only in admin", []RoleName{{"readAnyDatabase", "shop"}}, []check{
			{"a", "b", find, false},
		}, Actions(ActListDatabases), false, qos.Normal},
		{"readWriteAnyDatabase", []RoleName{{"readWriteAnyDatabase", "admin"}}, []check{
			{"a", "b", find | insert, true},
		}, Actions(ActSetQoSConfig), false, qos.Normal},
		{"clusterMonitor", []RoleName{{"clusterMonitor", "admin"}}, []check{
			{"a", "b", find, false},
		}, Actions(ActServerStatus, ActQoSStatus), true, qos.Normal},
		{"clusterMonitor cannot set QoS", []RoleName{{"clusterMonitor", "admin"}}, nil, Actions(ActSetQoSConfig), false, qos.Normal},
		{"clusterManager sets QoS and uses high", []RoleName{{"clusterManager", "admin"}}, nil, Actions(ActSetQoSConfig, ActSetCpuPools, ActReplSetConfigure), true, qos.High},
		{"tierHigh", []RoleName{{"readWrite", "shop"}, {"tierHigh", "admin"}}, nil, Actions(ActUseTierHigh), true, qos.High},
		{"root", []RoleName{{"root", "admin"}}, []check{{"any", "thing", ^ActionSet(0), true}}, ^ActionSet(0), true, qos.High},
		{"root only in admin", []RoleName{{"root", "shop"}}, []check{{"any", "thing", find, false}}, Actions(ActServerStatus), false, qos.Normal},
	}
	for _, tc := range cases {
		g := resolve(tc.roles, nil, qos.Normal)
		for _, c := range tc.checks {
			if got := g.Allows(c.db, c.coll, c.need); got != c.want {
				t.Errorf("%s: Allows(%s.%s, %v) = %v", tc.name, c.db, c.coll, c.need.Names(), got)
			}
		}
		if tc.cluster != 0 && g.AllowsCluster(tc.cluster) != tc.clusterWant {
			t.Errorf("%s: AllowsCluster(%v) = %v", tc.name, tc.cluster.Names(), !tc.clusterWant)
		}
		if g.BestTier != tc.best {
			t.Errorf("%s: best tier %v, want %v", tc.name, g.BestTier, tc.best)
		}
	}
}

func TestTiers(t *testing.T) {
	low := resolve([]RoleName{{"readWrite", "shop"}}, nil, qos.Low)
	if low.MayUseTier(qos.Normal) || low.MayUseTier(qos.High) || !low.MayUseTier(qos.Low) {
		t.Fatal("a low-tier user may use low only")
	}
	norm := resolve([]RoleName{{"readWrite", "shop"}}, nil, qos.Normal)
	if norm.MayUseTier(qos.High) || !norm.MayUseTier(qos.Low) {
		t.Fatal("a normal user may use normal and low")
	}
	custom := map[RoleName]*Role{{"gold", "admin"}: {Name: RoleName{"gold", "admin"}, Privileges: []Privilege{{Resource{Cluster: true}, Actions(ActUseTierHigh)}}}}
	gold := resolve([]RoleName{{"gold", "admin"}}, custom, qos.Low)
	if !gold.MayUseTier(qos.High) {
		t.Fatal("useTierHigh from a custom role")
	}
}

func TestCustomRolesAndCollections(t *testing.T) {
	ctx := context.Background()
	r := New(Options{Store: newMemStore()})
	if err := r.CreateRole(ctx, &Role{Name: RoleName{"ordersReader", "shop"}, Privileges: []Privilege{{Resource{DB: "shop", Collection: "orders"}, Actions(ActFind)}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateRole(ctx, &Role{Name: RoleName{"clerk", "shop"}, Roles: []RoleName{{"ordersReader", "shop"}},
		Privileges: []Privilege{{Resource{DB: "shop", Collection: "notes"}, Actions(ActInsert)}}}); err != nil {
		t.Fatal(err)
	}
	u := &User{Name: UserName{"c", "shop"}, Roles: []RoleName{{"clerk", "shop"}}, DefaultTier: qos.Normal}
	if err := r.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	g := r.Lookup(u.Name).Grants
	for _, c := range []struct {
		coll string
		need ActionSet
		want bool
	}{{"orders", Actions(ActFind), true}, {"orders", Actions(ActInsert), false}, {"notes", Actions(ActInsert), true}, {"notes", Actions(ActFind), false}, {"", Actions(ActFind), false}} {
		if g.Allows("shop", c.coll, c.need) != c.want {
			t.Errorf("shop.%s %v: want %v", c.coll, c.need.Names(), c.want)
		}
	}
	// Errors: existing role, missing role, cycle, other database, cluster action on a db.
	for _, tc := range []struct {
		role *Role
		kind ErrorKind
	}{
		{&Role{Name: RoleName{"clerk", "shop"}}, KindRoleExists},
		{&Role{Name: RoleName{"read", "shop"}}, KindRoleExists},
		{&Role{Name: RoleName{"x", "shop"}, Roles: []RoleName{{"nope", "shop"}}}, KindRoleNotFound},
		{&Role{Name: RoleName{"x", "shop"}, Privileges: []Privilege{{Resource{DB: "other"}, Actions(ActFind)}}}, KindBadValue},
		{&Role{Name: RoleName{"x", "shop"}, Privileges: []Privilege{{Resource{Cluster: true}, Actions(ActUseTierHigh)}}}, KindBadValue},
		{&Role{Name: RoleName{"x", "admin"}, Privileges: []Privilege{{Resource{DB: "a"}, Actions(ActUseTierHigh)}}}, KindBadValue},
	} {
		if err := r.CreateRole(ctx, tc.role); kindOf(err) != tc.kind {
			t.Errorf("create %s: got %v, want kind %d", tc.role.Name, err, tc.kind)
		}
	}
	err := r.UpdateRole(ctx, RoleName{"ordersReader", "shop"}, func(role *Role) error {
		role.Roles = append(role.Roles, RoleName{"clerk", "shop"})
		return nil
	})
	if kindOf(err) != KindBadValue {
		t.Fatalf("a cycle must be refused: %v", err)
	}
	// Dropping a role removes it from its holders; the session's principal
	// goes stale and re-resolves.
	p := r.Lookup(u.Name)
	if err := r.DropRole(ctx, RoleName{"ordersReader", "shop"}); err != nil {
		t.Fatal(err)
	}
	fresh := r.Fresh(p)
	if fresh == p {
		t.Fatal("a change must give a new principal")
	}
	if fresh.Grants.Allows("shop", "orders", Actions(ActFind)) {
		t.Fatal("privilege of a dropped role is still held")
	}
	if clerk, _ := r.Role(RoleName{"clerk", "shop"}); len(clerk.Roles) != 0 {
		t.Fatalf("clerk still inherits the dropped role: %v", clerk.Roles)
	}
	if err := r.DropUser(ctx, u.Name); err != nil || r.Fresh(fresh) != nil {
		t.Fatalf("dropped user still resolves: %v", err)
	}
	if err := r.DropUser(ctx, u.Name); kindOf(err) != KindUserNotFound {
		t.Fatalf("drop missing user: %v", err)
	}
}

func TestRegistryPersistsAndReloads(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	r := New(Options{Store: st})
	if r.Required() {
		t.Fatal("no users: auth not required")
	}
	cred, _ := NewCredential(SCRAMSHA256, "a", "pw", 4096, nil)
	u := &User{Name: UserName{"a", "admin"}, Credentials: map[Mechanism]Credential{SCRAMSHA256: cred}, Roles: []RoleName{{"root", "admin"}}, DefaultTier: qos.High}
	if err := r.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateUser(ctx, u); kindOf(err) != KindUserExists {
		t.Fatalf("duplicate user: %v", err)
	}
	r2 := New(Options{Store: st})
	if err := r2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	p := r2.Lookup(u.Name)
	if p == nil || !p.Grants.Root || p.User.DefaultTier != qos.High || !r2.Required() {
		t.Fatalf("reloaded user: %+v", p)
	}
	if c, ok := r2.Credential(u.Name, SCRAMSHA256); !ok || string(c.StoredKey) != string(cred.StoredKey) {
		t.Fatal("credential lost")
	}
	gen := r2.snap.Load().gen
	if err := r2.Load(ctx); err != nil || r2.snap.Load().gen != gen {
		t.Fatal("reloading unchanged data must keep the generation")
	}
}
