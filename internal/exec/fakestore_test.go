package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec/exectest"
	"tierdb/internal/storage"
)

// fakeStore is a Store over one collection's documents in memory
// (exectest.Table), for the tests of reads and writes (its write methods
// are in fakewrite_test.go), recording what the operators asked of it. A
// read runs the scan a storage.ScanParams describes as PostgreSQL would,
// except that it ignores the SQL prefilter (Where), which is only ever a
// superset of the matches: every row comes back (unless Table.Where
// says otherwise), and the read's recheck must drop those the filter
// does not match.
type fakeStore struct {
	*exectest.Table
	// calls are the params of every ScanChunk, in order; read counts the
	// rows all of them returned.
	calls []storage.ScanParams
	read  int
	// on is the node of every call; searches the text searches.
	on       []storage.On
	searches []storage.TextSearch
	// appended is Appended's channel, closed by append.
	appended chan struct{}

	// The write side (fakewrite_test.go): w's fields model the
	// collection's existence, concurrent writers and what was called.
	w fakeWrites
}

func newFakeStore(t *testing.T, docs ...bson.D) *fakeStore {
	t.Helper()
	tbl, err := exectest.NewTable(docs...)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeStore{Table: tbl}
}

func lookupField(d bson.D, k string) (any, bool) { return exectest.Lookup(d, k) }

func (f *fakeStore) ScanChunk(_ context.Context, on storage.On, col *storage.Collection, p storage.ScanParams, keep func([]byte) bool) (storage.Chunk, error) {
	f.calls = append(f.calls, p)
	f.on = append(f.on, on)
	ch := f.Scan(col, p, keep)
	f.read += ch.Read
	return ch, nil
}

func (f *fakeStore) Count(_ context.Context, on storage.On, _ *storage.Collection, where string, _ []any) (int64, error) {
	f.on = append(f.on, on)
	if where != "" {
		panic("fakeStore counts only every row")
	}
	return int64(len(f.Rows)), nil
}

func (f *fakeStore) Explain(_ context.Context, on storage.On, _ *storage.Collection, p storage.ScanParams) (string, error) {
	f.calls = append(f.calls, p)
	f.on = append(f.on, on)
	return "fake plan", nil
}

// SearchText is exectest.Table's: terms of the field "body".
func (f *fakeStore) SearchText(_ context.Context, on storage.On, _ *storage.Collection, _ *storage.Index, q storage.TextSearch) ([]storage.TextRow, error) {
	f.on = append(f.on, on)
	f.searches = append(f.searches, q)
	return f.Table.SearchText(q), nil
}

func (f *fakeStore) Tail(_ context.Context, on storage.On, _ *storage.Collection, p storage.TailParams) ([]storage.Row, bool, error) {
	f.on = append(f.on, on)
	rows, lost := f.Table.Tail(p)
	return rows, lost, nil
}

// Appended is closed by the next append.
func (f *fakeStore) Appended(*storage.Collection) <-chan struct{} {
	if f.appended == nil {
		f.appended = make(chan struct{})
	}
	return f.appended
}

// append inserts doc after the others and wakes Appended's waiters.
func (f *fakeStore) append(t *testing.T, doc bson.D) {
	t.Helper()
	if _, err := f.Append(doc); err != nil {
		t.Fatal(err)
	}
	if f.appended != nil {
		close(f.appended)
		f.appended = nil
	}
}
