package exec

import (
	"context"
	"time"

	"tierdb/internal/storage"
)

// Store is what a read (read.go, text.go, tail.go) needs from storage:
// chunks of a keyset scan or of an index walk, a count, PostgreSQL's plan
// of a scan, a full-text search, the tail of a capped collection; and what
// a write (write.go) needs: the collection (created on first write), a
// document by _id, an insert, a compare-and-swap replace and delete, a
// row lock, the version of a document last written. Where
// the work runs (tier, node, transaction) is the on argument of each
// method, never something exec puts in a context. *storage.Store
// satisfies it; tests use a fake over documents in memory.
type Store interface {
	// ScanChunk reads one chunk of the rows p selects (storage.ScanParams:
	// the prefilter, the keyset position, an index walk, a limit), asking
	// keep, when not nil, about each row's document before keeping it.
	ScanChunk(ctx context.Context, on storage.On, col *storage.Collection, p storage.ScanParams, keep func(doc []byte) bool) (storage.Chunk, error)
	// Count counts the rows the SQL predicate where selects ("" : all).
	Count(ctx context.Context, on storage.On, col *storage.Collection, where string, args []any) (int64, error)
	// Explain is PostgreSQL's plan of the scan p.
	Explain(ctx context.Context, on storage.On, col *storage.Collection, p storage.ScanParams) (string, error)
	// SearchText runs a full-text search on the text index ix.
	SearchText(ctx context.Context, on storage.On, col *storage.Collection, ix *storage.Index, q storage.TextSearch) ([]storage.TextRow, error)
	// Tail reads a capped collection in insertion order after a
	// position (storage.Store.Tail); lost says the position is gone.
	Tail(ctx context.Context, on storage.On, col *storage.Collection, p storage.TailParams) (rows []storage.Row, lost bool, err error)
	// Appended is closed at the next insert into the capped collection
	// col through this Store.
	Appended(col *storage.Collection) <-chan struct{}

	// Collection is the collection db.name, or ErrNamespaceNotFound.
	Collection(ctx context.Context, on storage.On, db, name string) (*storage.Collection, error)
	// CollectionForWrite is the collection, created when missing.
	CollectionForWrite(ctx context.Context, on storage.On, db, name string) (*storage.Collection, error)
	// Get is the row of the _id key key, nil when there is none.
	Get(ctx context.Context, on storage.On, col *storage.Collection, key []byte) (*storage.Row, error)
	// Insert inserts docs; a document's own failure (a duplicate key) is
	// a WriteError, and with ordered the batch stops at it.
	Insert(ctx context.Context, on storage.On, col *storage.Collection, docs []storage.Doc, ordered bool) (int, []storage.WriteError, error)
	// Replace swaps newDoc in for the row of key if it still holds old;
	// false when it does not (changed or deleted meanwhile).
	Replace(ctx context.Context, on storage.On, col *storage.Collection, key, old []byte, newDoc storage.Doc) (bool, error)
	// Delete deletes the rows that still hold the bytes given; it returns
	// how many it deleted.
	Delete(ctx context.Context, on storage.On, col *storage.Collection, rows []storage.Row) (int64, error)
	// WithRowLocked runs fn with the row of key locked (nil when there is
	// none), in on's transaction or one of its own; fn's on is where the
	// work under the lock runs.
	WithRowLocked(ctx context.Context, on storage.On, col *storage.Collection, key []byte, fn func(on storage.On, row *storage.Row) error) error
	// LastWritten is the version of the document of key this process
	// last wrote, nil when it does not remember one.
	LastWritten(col *storage.Collection, key []byte) []byte
	// Hot reports whether the document of key lost a compare-and-swap to
	// a concurrent write lately: an update of it takes the lock first.
	Hot(col *storage.Collection, key []byte) bool
}

var _ Store = (*storage.Store)(nil)

// OutStore is what $out and $merge write through beyond Store (output.go's
// StoreOutput): $out's new collection is created with the target's
// indexes, filled, and swapped in for the target in one DDL transaction
// (or dropped, as are those crashed $outs left behind); $merge replaces a
// batch of matches in one commit, each only if it still holds the bytes
// it was read with.
type OutStore interface {
	Store
	CreateCollection(ctx context.Context, on storage.On, db, name string) error
	CreateIndexes(ctx context.Context, on storage.On, db, name string, specs []storage.Index) (before, after int, created bool, err error)
	DropCollection(ctx context.Context, on storage.On, db, name string) error
	// StaleCollections names db's collections whose names start with
	// prefix, created longer than age ago.
	StaleCollections(ctx context.Context, on storage.On, db, prefix string, age time.Duration) ([]string, error)
	// ReplaceCollection renames db.from to db.to, dropping db.to.
	ReplaceCollection(ctx context.Context, on storage.On, db, from, to string) error
	// ReplaceMany swaps docs in for the rows of keys that still hold
	// olds, in one transaction; ok[i] is false where a row did not.
	ReplaceMany(ctx context.Context, on storage.On, c *storage.Collection, keys, olds [][]byte, docs []storage.Doc) ([]bool, error)
}

var _ OutStore = (*storage.Store)(nil)
