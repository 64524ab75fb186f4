package commands

import (
	"context"
	"time"

	"tierdb/internal/exec"
	"tierdb/internal/qos"
	"tierdb/internal/storage"
)

// Store is what the command layer needs from storage, by role: the
// documents exec reads and writes (exec.Store), what $out and $merge
// write through (exec.OutStore), explain's analysis of the statements a
// read runs (exec.Analyzer), the catalog of collections, indexes and
// views, figures for the stats commands, the backends and nodes it runs
// on, the durable records of retryable writes, and the switch of change
// streams. Where the work runs is each method's On (or tier), as in
// exec. *storage.Store satisfies it; the handler tests use a fake in
// memory (exectest.Store with the rest stubbed).
type Store interface {
	exec.Store
	exec.OutStore
	exec.Analyzer
	Catalog
	Views
	Stats
	Backends
	SessionRecords
	ChangeSwitch
}

var _ Store = (*storage.Store)(nil)

// Catalog is the collections and indexes of every database, and the DDL
// that changes them (Collection itself is exec.Store's; creating,
// dropping a collection and creating indexes also exec.OutStore's).
type Catalog interface {
	ListDatabases(ctx context.Context, on storage.On) ([]storage.DatabaseInfo, error)
	ListCollections(ctx context.Context, on storage.On, db string) ([]*storage.Collection, error)
	CreateCappedCollection(ctx context.Context, on storage.On, db, name string, c storage.Capped) error
	DropDatabase(ctx context.Context, on storage.On, db string) error
	RenameCollection(ctx context.Context, on storage.On, fromDB, from, toDB, to string, dropTarget bool) error
	DropIndex(ctx context.Context, on storage.On, db, name, index string) (before int, err error)
	ModifyIndex(ctx context.Context, on storage.On, db, name string, match func(*storage.Index) bool, change storage.IndexChange) (before, after storage.Index, err error)
	// TTLIndexes lists every TTL index, for the TTL monitor.
	TTLIndexes(ctx context.Context, on storage.On) ([]storage.TTLIndex, error)
}

// Views are the views of tierdb.views: a view is a namespace, the
// collection or view it reads and a pipeline.
type Views interface {
	// View is db.name's view, nil when it is not one.
	View(ctx context.Context, on storage.On, db, name string) (*storage.View, error)
	ListViews(ctx context.Context, on storage.On, db string) ([]storage.View, error)
	CreateView(ctx context.Context, on storage.On, v storage.View) error
	DropView(ctx context.Context, on storage.On, db, name string) (bool, error)
	DropViews(ctx context.Context, on storage.On, db string) error
	// ModifyView replaces v's definition after check, which may look up
	// the other views in the same transaction, accepts it.
	ModifyView(ctx context.Context, on storage.On, v storage.View, check func(lookup func(db, name string) (*storage.View, error)) error) error
}

// Stats are the figures of dbStats, collStats, $indexStats and validate.
type Stats interface {
	DatabaseStats(ctx context.Context, on storage.On, db string) (*storage.DatabaseStats, error)
	CollectionStats(ctx context.Context, on storage.On, c *storage.Collection) (*storage.CollectionStats, error)
	IndexUsage(ctx context.Context, on storage.On, c *storage.Collection) (map[string]storage.IndexUsage, error)
	Validate(ctx context.Context, on storage.On, c *storage.Collection) (*storage.Validation, error)
}

// Backends are the nodes (primary first) and the PostgreSQL backends
// tierdb runs on: readiness, pool and cache figures, WAL positions.
type Backends interface {
	Nodes() []*storage.Node
	Position(ctx context.Context, n *storage.Node) (storage.WALPosition, error)
	Ready(ctx context.Context) error
	PoolStats() [qos.NumTiers][2]int32
	BackendPIDs(t qos.Tier) []int
	MaxBackends() int
	AsyncCommits() int64
	DeferredWrites() (deferred, refused int64)
	WriteConflicts() (swapsLost, lockedWrites int64)
	VersionCacheStats() (hits, misses int64, entries, bytes int)
}

// SessionRecords are the durable records of retryable writes: which
// statement of a session ran last, and its reply.
type SessionRecords interface {
	BeginRecorded(ctx context.Context, t qos.Tier, k storage.SessionKey, txnNumber int64) (txn *storage.Txn, prev *storage.Record, err error)
	BeginWrite(ctx context.Context, t qos.Tier, k storage.SessionKey, txnNumber int64, deferFirst bool) (*storage.Txn, error)
	LoadRecord(ctx context.Context, t qos.Tier, k storage.SessionKey) (*storage.Record, error)
	TouchRecords(ctx context.Context, keys []storage.SessionKey) error
	DeleteRecords(ctx context.Context, keys []storage.SessionKey) error
	ReapRecords(ctx context.Context, idle time.Duration) (int64, error)
}

// ChangeSwitch turns change streams on (once per cluster) and says
// whether they are.
type ChangeSwitch interface {
	EnableChangeStreams(ctx context.Context) (*storage.ChangeSlot, error)
	ChangeStreamsEnabled(ctx context.Context) (bool, error)
}
