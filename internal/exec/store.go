package exec

import (
	"context"

	"tierdb/internal/storage"
)

// Store is what a read (read.go, text.go, tail.go) needs from storage:
// chunks of a keyset scan or of an index walk, a count, PostgreSQL's plan
// of a scan, a full-text search, the tail of a capped collection. Where
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
}

var _ Store = (*storage.Store)(nil)
