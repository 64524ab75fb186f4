package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Users and roles are kept as opaque BSON documents (package auth owns
// their shape) in two catalog tables. They are read whole at start and
// after every change: a deployment has tens of users, not millions, and
// the command layer checks requests against auth's in-memory copy, never
// against these tables.

// authTablesSQL is appended to the catalog bootstrap.
const authTablesSQL = `
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.users (
	db   text NOT NULL,
	name text NOT NULL,
	doc  bytea NOT NULL,
	PRIMARY KEY (db, name)
);
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.roles (
	db   text NOT NULL,
	name text NOT NULL,
	doc  bytea NOT NULL,
	PRIMARY KEY (db, name)
)`

// LoadAuth returns every user and role document, in key order. User and
// role documents are read and written on the primary's Normal-tier
// backends, whoever asks: user administration is rare, and the auth layer
// that calls it knows nothing of tiers.
func (s *Store) LoadAuth(ctx context.Context) (users, roles [][]byte, err error) {
	if users, err = s.loadDocs(ctx, "users"); err != nil {
		return nil, nil, err
	}
	if roles, err = s.loadDocs(ctx, "roles"); err != nil {
		return nil, nil, err
	}
	return users, roles, nil
}

func (s *Store) loadDocs(ctx context.Context, table string) ([][]byte, error) {
	rows, err := s.pool(ctx, On{}).Query(ctx, `SELECT doc FROM `+catalogSchema+`.`+table+` ORDER BY db, name`)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	return docs, fromPG(ctx, err)
}

// PutUser stores a user document; create fails with ErrDuplicateKey if the
// user exists, otherwise the document replaces the stored one.
func (s *Store) PutUser(ctx context.Context, db, name string, doc []byte, create bool) error {
	return s.putDoc(ctx, "users", db, name, doc, create)
}

// PutRole is PutUser for roles.
func (s *Store) PutRole(ctx context.Context, db, name string, doc []byte, create bool) error {
	return s.putDoc(ctx, "roles", db, name, doc, create)
}

// DeleteUser removes a user document; false if there was none.
func (s *Store) DeleteUser(ctx context.Context, db, name string) (bool, error) {
	return s.deleteDoc(ctx, "users", db, name)
}

// DeleteRole removes a role document; false if there was none.
func (s *Store) DeleteRole(ctx context.Context, db, name string) (bool, error) {
	return s.deleteDoc(ctx, "roles", db, name)
}

func (s *Store) putDoc(ctx context.Context, table, db, name string, doc []byte, create bool) error {
	q := `INSERT INTO ` + catalogSchema + `.` + table + ` (db, name, doc) VALUES ($1, $2, $3)`
	if !create {
		q += ` ON CONFLICT (db, name) DO UPDATE SET doc = EXCLUDED.doc`
	}
	_, err := s.pool(ctx, On{}).Exec(ctx, q, db, name, doc)
	return fromPG(ctx, err)
}

func (s *Store) deleteDoc(ctx context.Context, table, db, name string) (bool, error) {
	tag, err := s.pool(ctx, On{}).Exec(ctx, `DELETE FROM `+catalogSchema+`.`+table+` WHERE db = $1 AND name = $2`, db, name)
	if err != nil {
		return false, fromPG(ctx, err)
	}
	return tag.RowsAffected() > 0, nil
}
