// Package auth is tierdb's access control: SCRAM-SHA-1 and SCRAM-SHA-256
// (RFC 5802, RFC 7677, with MongoDB's conventions), the SCRAM message parser,
// credential derivation, users and roles (built-in and custom), and the
// resolution of a user's roles into Grants that answer "may this user run
// this action on this resource, at this tier" with a few map lookups.
//
// It is the only package that handles passwords and SCRAM keys. It must
// never store or log a password or a key derived from one (only salted,
// iterated StoredKey/ServerKey pairs are kept), never tell an unknown user
// from a wrong password (both fail the same way after the same work), and
// never reach PostgreSQL itself: users and roles are persisted through the
// Store interface (storage implements it) and cached in memory, so checking
// a request costs no SQL. It knows nothing about the wire protocol; the
// command layer turns its errors into MongoDB codes.
package auth
