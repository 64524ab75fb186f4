package exectest

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
)

// Store is a catalog of collections in memory, each a Table, and views:
// what exec.Store and exec.OutStore ask of storage (this file: the
// documents) and the catalog and views of the command layer
// (catalog.go). Collections are described as storage describes them
// (storage.NewCollection); a DDL change gives the collection a new
// *storage.Collection, as storage's catalog cache does. It is safe for
// concurrent use; a row lock (WithRowLocked) is not modelled beyond
// running fn with the row as it is.
type Store struct {
	mu     sync.Mutex
	colls  map[string]*storage.Collection // by namespace
	tables map[string]*Table              // by collection UUID
	views  map[string]storage.View        // by namespace
	nextID int
	// appended are the waiters of Appended, by collection UUID.
	appended map[string]chan struct{}
}

// NewStore is an empty catalog.
func NewStore() *Store {
	return &Store{colls: map[string]*storage.Collection{}, tables: map[string]*Table{}, views: map[string]storage.View{},
		appended: map[string]chan struct{}{}}
}

// Load creates db.name, when missing, and inserts docs into it.
func (s *Store) Load(db, name string, docs ...bson.D) error {
	col, err := s.CollectionForWrite(context.Background(), storage.On{}, db, name)
	if err != nil {
		return err
	}
	prepared := make([]storage.Doc, len(docs))
	for i, d := range docs {
		id, _ := Lookup(d, "_id")
		prepared[i] = storage.Doc{ID: id, D: d}
	}
	_, werrs, err := s.Insert(context.Background(), storage.On{}, col, prepared, true)
	if err == nil && len(werrs) > 0 {
		err = werrs[0].Err
	}
	return err
}

// Docs are db.name's documents in insertion order, nil when it is missing.
func (s *Store) Docs(db, name string) []bson.D {
	s.mu.Lock()
	defer s.mu.Unlock()
	if col := s.colls[db+"."+name]; col != nil {
		return s.tables[col.UUID].Docs()
	}
	return nil
}

func notFound(db, name string) error {
	return &storage.Error{Code: storage.ErrNamespaceNotFound, Msg: fmt.Sprintf("ns does not exist: %s.%s", db, name)}
}

// table is col's table; the caller holds mu.
func (s *Store) table(col *storage.Collection) (*Table, error) {
	if t := s.tables[col.UUID]; t != nil {
		return t, nil
	}
	return nil, notFound(col.DB, col.Name)
}

// withTable runs fn on col's table under mu.
func (s *Store) withTable(col *storage.Collection, fn func(t *Table) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.table(col)
	if err != nil {
		return err
	}
	return fn(t)
}

func (s *Store) ScanChunk(_ context.Context, _ storage.On, col *storage.Collection, p storage.ScanParams, keep func([]byte) bool) (ch storage.Chunk, err error) {
	err = s.withTable(col, func(t *Table) error {
		ch = t.Scan(col, p, keep)
		return nil
	})
	return ch, err
}

// Count counts every row: the fake cannot run a SQL predicate, and exec
// asks for a count with one never.
func (s *Store) Count(_ context.Context, _ storage.On, col *storage.Collection, where string, _ []any) (n int64, err error) {
	if where != "" {
		panic("exectest.Store counts only every row")
	}
	err = s.withTable(col, func(t *Table) error {
		n = int64(len(t.Rows))
		return nil
	})
	return n, err
}

func (s *Store) Explain(context.Context, storage.On, *storage.Collection, storage.ScanParams) (string, error) {
	return "fake plan", nil
}

// SearchText is Table.SearchText: terms of the field "body".
func (s *Store) SearchText(_ context.Context, _ storage.On, col *storage.Collection, _ *storage.Index, q storage.TextSearch) (rows []storage.TextRow, err error) {
	err = s.withTable(col, func(t *Table) error {
		rows = t.SearchText(q)
		return nil
	})
	return rows, err
}

func (s *Store) Tail(_ context.Context, _ storage.On, col *storage.Collection, p storage.TailParams) (rows []storage.Row, lost bool, err error) {
	err = s.withTable(col, func(t *Table) error {
		rows, lost = t.Tail(p)
		return nil
	})
	return rows, lost, err
}

// Appended is closed by the next insert into col.
func (s *Store) Appended(col *storage.Collection) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.appended[col.UUID]
	if ch == nil {
		ch = make(chan struct{})
		s.appended[col.UUID] = ch
	}
	return ch
}

func (s *Store) Collection(_ context.Context, _ storage.On, db, name string) (*storage.Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if col := s.colls[db+"."+name]; col != nil {
		return col, nil
	}
	return nil, notFound(db, name)
}

func (s *Store) CollectionForWrite(ctx context.Context, on storage.On, db, name string) (*storage.Collection, error) {
	col, err := s.Collection(ctx, on, db, name)
	if err == nil || !storage.IsCode(err, storage.ErrNamespaceNotFound) {
		return col, err
	}
	if err := s.CreateCollection(ctx, on, db, name); err != nil && !storage.IsCode(err, storage.ErrNamespaceExists) {
		return nil, err
	}
	return s.Collection(ctx, on, db, name)
}

func (s *Store) Get(_ context.Context, _ storage.On, col *storage.Collection, key []byte) (row *storage.Row, err error) {
	err = s.withTable(col, func(t *Table) error {
		row = t.Get(key)
		return nil
	})
	return row, err
}

// Insert checks _id only: secondary unique indexes are not modelled.
func (s *Store) Insert(_ context.Context, _ storage.On, col *storage.Collection, docs []storage.Doc, ordered bool) (n int, werrs []storage.WriteError, err error) {
	err = s.withTable(col, func(t *Table) error {
		n, werrs, err = t.Insert(docs, ordered, nil)
		if ch := s.appended[col.UUID]; ch != nil && n > 0 {
			close(ch)
			delete(s.appended, col.UUID)
		}
		return err
	})
	return n, werrs, err
}

func (s *Store) Replace(_ context.Context, _ storage.On, col *storage.Collection, key, old []byte, newDoc storage.Doc) (ok bool, err error) {
	err = s.withTable(col, func(t *Table) error {
		ok, err = t.Swap(t.Find(key), old, newDoc.D)
		return err
	})
	return ok, err
}

func (s *Store) Delete(_ context.Context, _ storage.On, col *storage.Collection, rows []storage.Row) (n int64, err error) {
	err = s.withTable(col, func(t *Table) error {
		for _, r := range rows {
			if t.DeleteIfHolds(r) {
				n++
			}
		}
		return nil
	})
	return n, err
}

func (s *Store) WithRowLocked(ctx context.Context, on storage.On, col *storage.Collection, key []byte, fn func(storage.On, *storage.Row) error) error {
	row, err := s.Get(ctx, on, col, key)
	if err != nil {
		return err
	}
	return fn(on, row)
}

// LastWritten remembers nothing: every write reads first.
func (s *Store) LastWritten(*storage.Collection, []byte) []byte { return nil }

// Hot is false: every update swaps optimistically first.
func (s *Store) Hot(*storage.Collection, []byte) bool { return false }

// ReplaceMany swaps each document in if its row still holds old.
func (s *Store) ReplaceMany(_ context.Context, _ storage.On, col *storage.Collection, keys, olds [][]byte, docs []storage.Doc) (ok []bool, err error) {
	err = s.withTable(col, func(t *Table) error {
		ok = make([]bool, len(keys))
		for i := range keys {
			if ok[i], err = t.Swap(t.Find(keys[i]), olds[i], docs[i].D); err != nil {
				return err
			}
		}
		return nil
	})
	return ok, err
}
