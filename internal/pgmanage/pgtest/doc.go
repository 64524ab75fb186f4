// Package pgtest gives Go tests a real, throwaway PostgreSQL server managed
// by pgmanage.
//
// One test needing its own server:
//
//	c := pgtest.Start(t) // stopped and deleted when the test ends
//	conn, err := pgx.Connect(ctx, c.ConnString())
//
// A whole package sharing one server (a start costs a second or more):
//
//	var connString string
//
//	func TestMain(m *testing.M) {
//		pgtest.Main(m, func(cs string) { connString = cs })
//	}
//
// Tests sharing a server must not depend on each other's data: use distinct
// table or database names per test, or clean up after themselves.
//
// Missing PostgreSQL binaries fail the tests (with pgmanage.FindBinaries'
// installation hint) rather than skipping them: a skipped storage test
// passes silently. This package must never be imported by non-test code.
package pgtest
