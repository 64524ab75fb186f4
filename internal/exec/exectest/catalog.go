package exectest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"tierdb/internal/storage"
)

// The catalog of Store: collections, their indexes and views, with the
// errors storage answers. Secondary index keys are not stored: a walk
// computes them from the documents (Table.Scan).

func exists(msg string, args ...any) error {
	return &storage.Error{Code: storage.ErrNamespaceExists, Msg: fmt.Sprintf(msg, args...)}
}

// create adds db.name; the caller holds mu.
func (s *Store) create(db, name string, capped *storage.Capped) error {
	ns := db + "." + name
	if s.colls[ns] != nil {
		return exists("Collection %s already exists.", ns)
	}
	if _, ok := s.views[ns]; ok {
		return exists("A view already exists. NS: %s", ns)
	}
	s.nextID++
	col := storage.NewCollection(db, name, fmt.Sprintf("%08d-0000-0000-0000-000000000000", s.nextID), nil)
	col.Capped = capped
	s.colls[ns], s.tables[col.UUID] = col, &Table{}
	return nil
}

func (s *Store) CreateCollection(_ context.Context, _ storage.On, db, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(db, name, nil)
}

func (s *Store) CreateCappedCollection(_ context.Context, _ storage.On, db, name string, c storage.Capped) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(db, name, &c)
}

// drop removes db.name and its table; the caller holds mu.
func (s *Store) drop(db, name string) error {
	col := s.colls[db+"."+name]
	if col == nil {
		return &storage.Error{Code: storage.ErrNamespaceNotFound, Msg: "ns not found"}
	}
	delete(s.colls, db+"."+name)
	delete(s.tables, col.UUID)
	return nil
}

func (s *Store) DropCollection(_ context.Context, _ storage.On, db, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drop(db, name)
}

func (s *Store) DropDatabase(_ context.Context, _ storage.On, db string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, col := range s.collectionsOf(db) {
		if err := s.drop(db, col.Name); err != nil {
			return err
		}
	}
	return nil
}

// collectionsOf are db's collections in name order; the caller holds mu.
func (s *Store) collectionsOf(db string) []*storage.Collection {
	var out []*storage.Collection
	for _, col := range s.colls {
		if col.DB == db {
			out = append(out, col)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Store) ListCollections(_ context.Context, _ storage.On, db string) ([]*storage.Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collectionsOf(db), nil
}

// ListDatabases lists the databases with a collection; sizes are 0.
func (s *Store) ListDatabases(context.Context, storage.On) ([]storage.DatabaseInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.DatabaseInfo
	for _, col := range s.colls {
		if !slices.ContainsFunc(out, func(d storage.DatabaseInfo) bool { return d.Name == col.DB }) {
			out = append(out, storage.DatabaseInfo{Name: col.DB})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// StaleCollections: every collection of the fake is new.
func (s *Store) StaleCollections(context.Context, storage.On, string, string, time.Duration) ([]string, error) {
	return nil, nil
}

// ReplaceCollection renames db.from to db.to, dropping db.to.
func (s *Store) ReplaceCollection(_ context.Context, _ storage.On, db, from, to string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.colls[db+"."+from]
	switch _, view := s.views[db+"."+to]; {
	case src == nil:
		return notFound(db, from)
	case view:
		return exists("%s.%s is a view", db, to)
	}
	if s.colls[db+"."+to] != nil {
		if err := s.drop(db, to); err != nil {
			return err
		}
	}
	s.rename(src, db, to)
	return nil
}

// rename moves col to db.name, keeping its table; the caller holds mu.
func (s *Store) rename(col *storage.Collection, db, name string) {
	delete(s.colls, col.Namespace())
	moved := storage.NewCollection(db, name, col.UUID, col.Indexes[1:])
	moved.Capped = col.Capped
	s.colls[db+"."+name] = moved
}

func (s *Store) RenameCollection(_ context.Context, _ storage.On, fromDB, from, toDB, to string, dropTarget bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.colls[fromDB+"."+from]
	if src == nil {
		return &storage.Error{Code: storage.ErrNamespaceNotFound, Msg: fmt.Sprintf("Source collection %s.%s does not exist", fromDB, from)}
	}
	if _, view := s.views[toDB+"."+to]; view || s.colls[toDB+"."+to] != nil && !dropTarget {
		return exists("target namespace exists")
	}
	if s.colls[toDB+"."+to] != nil {
		if err := s.drop(toDB, to); err != nil {
			return err
		}
	}
	s.rename(src, toDB, to)
	return nil
}

// withIndexes replaces db.name by a description with the secondary
// indexes change makes of its own; the caller holds mu.
func (s *Store) withIndexes(db, name string, change func(col *storage.Collection, secondary []storage.Index) ([]storage.Index, error)) error {
	col := s.colls[db+"."+name]
	if col == nil {
		return notFound(db, name)
	}
	secondary, err := change(col, slices.Clone(col.Indexes[1:]))
	if err != nil {
		return err
	}
	next := storage.NewCollection(db, name, col.UUID, secondary)
	next.Capped = col.Capped
	s.colls[db+"."+name] = next
	return nil
}

// CreateIndexes adds the indexes that do not exist (storage's
// Collection.Conflict decides), creating the collection when missing;
// uniqueness is not checked against the documents.
func (s *Store) CreateIndexes(_ context.Context, _ storage.On, db, name string, specs []storage.Index) (before, after int, created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.colls[db+"."+name] == nil {
		if err := s.create(db, name, nil); err != nil {
			return 0, 0, false, err
		}
		created = true
	}
	err = s.withIndexes(db, name, func(col *storage.Collection, secondary []storage.Index) ([]storage.Index, error) {
		before = len(col.Indexes)
		for _, spec := range specs {
			existing, err := storage.NewCollection(db, name, col.UUID, secondary).Conflict(&spec)
			if err != nil {
				return nil, err
			}
			if !existing {
				s.nextID++
				spec.Column = fmt.Sprintf("k_%d", s.nextID)
				secondary = append(secondary, spec)
			}
		}
		after = len(secondary) + 1
		return secondary, nil
	})
	return before, after, created, err
}

// DropIndex drops one index by name, or all but _id_ with "*".
func (s *Store) DropIndex(_ context.Context, _ storage.On, db, name, index string) (before int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.withIndexes(db, name, func(col *storage.Collection, secondary []storage.Index) ([]storage.Index, error) {
		before = len(col.Indexes)
		if index == "_id_" {
			return nil, &storage.Error{Code: storage.ErrIllegal, Msg: "cannot drop _id index"}
		}
		keep := slices.DeleteFunc(secondary, func(ix storage.Index) bool { return index == "*" || ix.Name == index })
		if index != "*" && len(keep) == before-1 {
			return nil, &storage.Error{Code: storage.ErrIndexNotFound, Msg: fmt.Sprintf("index not found with name [%s]", index)}
		}
		return keep, nil
	})
	return before, err
}

// ModifyIndex changes the hidden and expireAfterSeconds options of the
// first secondary index match picks.
func (s *Store) ModifyIndex(_ context.Context, _ storage.On, db, name string, match func(*storage.Index) bool, change storage.IndexChange) (before, after storage.Index, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.withIndexes(db, name, func(col *storage.Collection, secondary []storage.Index) ([]storage.Index, error) {
		i := slices.IndexFunc(secondary, func(ix storage.Index) bool { return match(&ix) })
		switch {
		case i < 0 && match(&col.Indexes[0]):
			return nil, &storage.Error{Code: storage.ErrIllegal, Msg: "cannot modify the _id index"}
		case i < 0:
			return nil, &storage.Error{Code: storage.ErrIndexNotFound, Msg: "cannot find index for collMod"}
		}
		before = secondary[i]
		if change.ExpireAfterSeconds != nil {
			v := *change.ExpireAfterSeconds
			secondary[i].ExpireAfterSeconds = &v
		}
		if change.Hidden != nil {
			secondary[i].Hidden = *change.Hidden
		}
		after = secondary[i]
		return secondary, nil
	})
	return before, after, err
}

// TTLIndexes lists every TTL index.
func (s *Store) TTLIndexes(context.Context, storage.On) ([]storage.TTLIndex, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.TTLIndex
	for _, col := range s.colls {
		for i := range col.Indexes {
			if col.Indexes[i].ExpireAfterSeconds != nil {
				out = append(out, storage.TTLIndex{Col: col, Index: &col.Indexes[i]})
			}
		}
	}
	return out, nil
}

func (s *Store) View(_ context.Context, _ storage.On, db, name string) (*storage.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.views[db+"."+name]; ok {
		return &v, nil
	}
	return nil, nil
}

func (s *Store) ListViews(_ context.Context, _ storage.On, db string) ([]storage.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.View
	for _, v := range s.views {
		if v.DB == db {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *Store) CreateView(_ context.Context, _ storage.On, v storage.View) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := v.DB + "." + v.Name
	if _, view := s.views[ns]; view || s.colls[ns] != nil {
		return exists("Namespace %s already exists", ns)
	}
	s.views[ns] = v
	return nil
}

// ModifyView replaces v's definition if check accepts it, seeing the
// definitions with the change made.
func (s *Store) ModifyView(_ context.Context, _ storage.On, v storage.View, check func(lookup func(db, name string) (*storage.View, error)) error) error {
	s.mu.Lock()
	ns := v.DB + "." + v.Name
	old, ok := s.views[ns]
	if !ok {
		s.mu.Unlock()
		return notFound(v.DB, v.Name)
	}
	s.views[ns] = v
	s.mu.Unlock()
	err := check(func(db, name string) (*storage.View, error) {
		return s.View(context.Background(), storage.On{}, db, name)
	})
	if err != nil {
		s.mu.Lock()
		s.views[ns] = old
		s.mu.Unlock()
	}
	return err
}

func (s *Store) DropView(_ context.Context, _ storage.On, db, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.views[db+"."+name]
	delete(s.views, db+"."+name)
	return ok, nil
}

func (s *Store) DropViews(_ context.Context, _ storage.On, db string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns, v := range s.views {
		if v.DB == db && strings.HasPrefix(ns, db+".") {
			delete(s.views, ns)
		}
	}
	return nil
}
