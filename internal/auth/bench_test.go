package auth

import (
	"context"
	"testing"

	"tierdb/internal/qos"
)

// BenchmarkAuthorize is the per-request cost of access control: refresh
// the session's principal (one atomic load and a compare) and check one
// action on a collection, for a user with a data role on a few databases
// and a tier role, plus the tier check.
func BenchmarkAuthorize(b *testing.B) {
	ctx := context.Background()
	r := New(Options{Store: newMemStore()})
	u := &User{Name: UserName{"app", "admin"}, DefaultTier: qos.Normal, Roles: []RoleName{
		{"readWrite", "shop"}, {"read", "catalog"}, {"readWrite", "sessions"}, {"tierHigh", "admin"}, {"clusterMonitor", "admin"},
	}}
	if err := r.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	p := r.Lookup(u.Name)
	need := Actions(ActUpdate)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p = r.Fresh(p)
		if !p.Grants.Allows("sessions", "usertable", need) || !p.Grants.MayUseTier(qos.High) {
			b.Fatal("denied")
		}
	}
}

// BenchmarkAuthorizeCollectionGrant is the slower path: the privilege is
// on one collection, so the database-wide sets miss first.
func BenchmarkAuthorizeCollectionGrant(b *testing.B) {
	custom := map[RoleName]*Role{{"clerk", "shop"}: {Name: RoleName{"clerk", "shop"}, Privileges: []Privilege{{Resource{DB: "shop", Collection: "orders"}, Actions(ActFind, ActUpdate)}}}}
	g := resolve([]RoleName{{"clerk", "shop"}, {"read", "catalog"}}, custom, qos.Normal)
	need := Actions(ActUpdate)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !g.Allows("shop", "orders", need) {
			b.Fatal("denied")
		}
	}
}
