package commands

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

// usersStore keeps user and role documents in memory.
type usersStore struct{ users, roles map[string][]byte }

func (m *usersStore) LoadAuth(context.Context) (users, roles [][]byte, err error) {
	for _, d := range m.users {
		users = append(users, d)
	}
	for _, d := range m.roles {
		roles = append(roles, d)
	}
	return users, roles, nil
}
func (m *usersStore) PutUser(_ context.Context, db, name string, doc []byte, _ bool) error {
	m.users[db+"."+name] = doc
	return nil
}
func (m *usersStore) PutRole(_ context.Context, db, name string, doc []byte, _ bool) error {
	m.roles[db+"."+name] = doc
	return nil
}
func (m *usersStore) DeleteUser(_ context.Context, db, name string) (bool, error) {
	_, ok := m.users[db+"."+name]
	delete(m.users, db+"."+name)
	return ok, nil
}
func (m *usersStore) DeleteRole(_ context.Context, db, name string) (bool, error) {
	_, ok := m.roles[db+"."+name]
	delete(m.roles, db+"."+name)
	return ok, nil
}

func authHandlers(t testing.TB) (*Handlers, *auth.Registry) {
	reg := auth.New(auth.Options{Store: &usersStore{users: map[string][]byte{}, roles: map[string][]byte{}}})
	for _, u := range []*auth.User{
		{Name: auth.UserName{User: "app", DB: "admin"}, DefaultTier: qos.Normal, Roles: []auth.RoleName{{Role: "readWrite", DB: "ycsb"}, {Role: "read", DB: "catalog"}}},
		{Name: auth.UserName{User: "batch", DB: "admin"}, DefaultTier: qos.Low, Roles: []auth.RoleName{{Role: "readWrite", DB: "ycsb"}}},
	} {
		if err := reg.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{Auth: reg}), reg
}

func request(h *Handlers, s *Session, db string, cmd bson.D) *Request {
	return &Request{DB: db, Name: cmd[0].Key, Cmd: cmd, Session: s, cmd: h.table[cmd[0].Key]}
}

func TestAuthorizeTable(t *testing.T) {
	h, reg := authHandlers(t)
	app := &Session{User: reg.Lookup(auth.UserName{User: "app", DB: "admin"}), Tier: qos.Normal}
	batch := &Session{User: reg.Lookup(auth.UserName{User: "batch", DB: "admin"}), Tier: qos.Low}
	anon := &Session{}
	for _, tc := range []struct {
		s    *Session
		db   string
		cmd  bson.D
		code mongoerr.Code // 0: allowed
	}{
		{app, "ycsb", bson.D{{Key: "find", Value: "usertable"}}, 0},
		{app, "ycsb", bson.D{{Key: "update", Value: "usertable"}}, 0},
		{app, "catalog", bson.D{{Key: "find", Value: "items"}}, 0},
		{app, "catalog", bson.D{{Key: "insert", Value: "items"}}, mongoerr.Unauthorized},
		{app, "other", bson.D{{Key: "find", Value: "x"}}, mongoerr.Unauthorized},
		{app, "ycsb", bson.D{{Key: "getMore", Value: int64(1)}, {Key: "collection", Value: "usertable"}}, 0},
		{app, "catalog", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "items"}}}}, 0},
		{app, "catalog", bson.D{{Key: "findAndModify", Value: "items"}, {Key: "remove", Value: true}}, mongoerr.Unauthorized},
		{app, "ycsb", bson.D{{Key: "findAndModify", Value: "usertable"}, {Key: "remove", Value: true}}, 0},
		{app, "ycsb", bson.D{{Key: "dropDatabase", Value: 1}}, mongoerr.Unauthorized},
		{app, "admin", bson.D{{Key: "setQoSConfig", Value: 1}}, mongoerr.Unauthorized},
		{app, "admin", bson.D{{Key: "serverStatus", Value: 1}}, mongoerr.Unauthorized},
		{app, "admin", bson.D{{Key: "qosStatus", Value: 1}}, 0},
		{batch, "admin", bson.D{{Key: "setCpuPools", Value: bson.D{}}}, mongoerr.Unauthorized},
		{anon, "admin", bson.D{{Key: "hello", Value: 1}}, 0},
		{anon, "admin", bson.D{{Key: "saslStart", Value: 1}}, 0},
		{anon, "ycsb", bson.D{{Key: "find", Value: "usertable"}}, mongoerr.Unauthorized},
		{anon, "admin", bson.D{{Key: "createUser", Value: "x"}}, mongoerr.Unauthorized},
	} {
		err := h.authorize(request(h, tc.s, tc.db, tc.cmd))
		var got mongoerr.Code
		if err != nil {
			e, _ := Map(err)
			got = e.Code
		}
		if got != tc.code {
			t.Errorf("%v on %s: got code %d (%v), want %d", tc.cmd, tc.db, got, err, tc.code)
		}
	}
	// Tiers: the batch user holds low only; app holds normal and low.
	for _, tc := range []struct {
		s  *Session
		t  qos.Tier
		ok bool
	}{{batch, qos.Low, true}, {batch, qos.Normal, false}, {batch, qos.High, false}, {app, qos.Normal, true}, {app, qos.High, false}} {
		if err := h.authorizeTier(tc.s, tc.t); (err == nil) != tc.ok {
			t.Errorf("tier %v: %v", tc.t, err)
		}
	}
}

// Every command in the table says who may run it; the zero value (root
// only) must be a decision, not an omission, so list the root-only ones.
func TestEveryCommandDeclaresAccess(t *testing.T) {
	h, _ := authHandlers(t)
	for name, c := range h.table {
		if c.access.kind == accessRoot {
			t.Errorf("command %s declares no access: it would need root", name)
		}
	}
}

// BenchmarkCheck is the whole per-request access check of the Dispatch
// wrapper for an authenticated user: principal refresh, the command's
// collection, the privilege lookup, and the tier check.
func BenchmarkCheck(b *testing.B) {
	h, reg := authHandlers(b)
	s := &Session{User: reg.Lookup(auth.UserName{User: "app", DB: "admin"}), Tier: qos.Normal}
	req := request(h, s, "ycsb", bson.D{{Key: "update", Value: "usertable"}, {Key: "updates", Value: bson.A{}}})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.authorize(req); err != nil {
			b.Fatal(err)
		}
		if err := h.authorizeTier(s, s.Tier); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckAuthOff is the same check on a server without users.
func BenchmarkCheckAuthOff(b *testing.B) {
	h := New(Options{Auth: auth.New(auth.Options{Store: &usersStore{users: map[string][]byte{}, roles: map[string][]byte{}}})})
	s := &Session{Tier: qos.Normal}
	req := request(h, s, "ycsb", bson.D{{Key: "update", Value: "usertable"}})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.authorize(req); err != nil {
			b.Fatal(err)
		}
	}
}
