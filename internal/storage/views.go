package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Views are catalog entries only: a name, the namespace it reads and its
// pipeline (BSON bytes that storage keeps, never reads). A view and a
// collection never share a name.
const viewsSQL = `;
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.views (
	db       text NOT NULL,
	name     text NOT NULL,
	view_on  text NOT NULL,
	pipeline bytea NOT NULL,
	PRIMARY KEY (db, name)
)`

// View is one view's definition.
type View struct {
	DB, Name, ViewOn string
	// Pipeline is the BSON the caller stored.
	Pipeline []byte
}

// View returns the view db.name, or nil when there is none.
func (s *Store) View(ctx context.Context, on On, db, name string) (*View, error) {
	return loadView(ctx, s.catalogPool(ctx, on), db, name)
}

func loadView(ctx context.Context, q rowQuerier, db, name string) (*View, error) {
	v := &View{DB: db, Name: name}
	err := q.QueryRow(ctx, `SELECT view_on, pipeline FROM `+catalogSchema+`.views WHERE db = $1 AND name = $2`, db, name).Scan(&v.ViewOn, &v.Pipeline)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	return v, nil
}

// CreateView records a view; ErrNamespaceExists when a collection or a
// view has the name.
func (s *Store) CreateView(ctx context.Context, on On, v View) error {
	return s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		col, err := s.cat.load(ctx, tx, v.DB, v.Name)
		if err != nil {
			return err
		}
		old, err := loadView(ctx, tx, v.DB, v.Name)
		if err != nil {
			return err
		}
		if col != nil || old != nil {
			return newErr(ErrNamespaceExists, "Namespace %s.%s already exists", v.DB, v.Name)
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+catalogSchema+`.views (db, name, view_on, pipeline) VALUES ($1, $2, $3, $4)`, v.DB, v.Name, v.ViewOn, v.Pipeline)
		return err
	})
}

// ModifyView changes a view's definition; ErrNamespaceNotFound when there
// is no such view. check sees the definitions as they are inside the
// change (to refuse a cycle) and may refuse it.
func (s *Store) ModifyView(ctx context.Context, on On, v View, check func(lookup func(db, name string) (*View, error)) error) error {
	return s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		old, err := loadView(ctx, tx, v.DB, v.Name)
		if err != nil {
			return err
		}
		if old == nil {
			return newErr(ErrNamespaceNotFound, "ns does not exist: %s.%s", v.DB, v.Name)
		}
		if _, err := tx.Exec(ctx, `UPDATE `+catalogSchema+`.views SET view_on = $3, pipeline = $4 WHERE db = $1 AND name = $2`, v.DB, v.Name, v.ViewOn, v.Pipeline); err != nil {
			return err
		}
		return check(func(db, name string) (*View, error) { return loadView(ctx, tx, db, name) })
	})
}

// DropView removes a view; false when there was none.
func (s *Store) DropView(ctx context.Context, on On, db, name string) (bool, error) {
	var dropped bool
	err := s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM `+catalogSchema+`.views WHERE db = $1 AND name = $2`, db, name)
		dropped = tag.RowsAffected() > 0
		return err
	})
	return dropped, err
}

// DropViews removes every view of db.
func (s *Store) DropViews(ctx context.Context, on On, db string) error {
	return s.cat.ddl(ctx, on, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM `+catalogSchema+`.views WHERE db = $1`, db)
		return err
	})
}

// ListViews lists the views of db in name order.
func (s *Store) ListViews(ctx context.Context, on On, db string) ([]View, error) {
	rows, err := s.catalogPool(ctx, on).Query(ctx, `SELECT name, view_on, pipeline FROM `+catalogSchema+`.views WHERE db = $1 ORDER BY name`, db)
	if err != nil {
		return nil, fromPG(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (View, error) {
		v := View{DB: db}
		err := r.Scan(&v.Name, &v.ViewOn, &v.Pipeline)
		return v, err
	})
	return out, fromPG(ctx, err)
}

// viewExists reports whether db.name is a view, inside a DDL transaction.
func viewExists(ctx context.Context, tx pgx.Tx, db, name string) (bool, error) {
	v, err := loadView(ctx, tx, db, name)
	return v != nil, err
}
