package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/exec/exectest"
	"tierdb/internal/storage"
)

// fakeWrites is the write side of a fakeStore. A compare-and-swap
// (Replace, Delete) outside a row lock loses while lose > 0: a rival
// writer changes the document first (rival, by default setting "rival"
// to how many times it did) and the swap fails, as storage's would.
// Under WithRowLocked nothing loses, as no rival can write a locked row.
type fakeWrites struct {
	col     *storage.Collection // what Collection returns
	missing bool                // Collection fails with NamespaceNotFound
	created int                 // collections CollectionForWrite created
	lose    int
	rival   func(bson.D) bson.D
	// rivalInsert, when set, is inserted by a rival just before the next
	// Insert (an upsert racing another).
	rivalInsert bson.D
	// remember makes LastWritten return what Replace and Insert stored.
	remember bool
	versions map[string][]byte
	// hot is what Hot reports for every document.
	hot bool

	inLock                      bool
	locks, replaces, lost, gets int
	lockedWrites                int // Replace or Delete under a lock
}

// set stores doc as row i.
func (f *fakeStore) set(i int, doc bson.D) {
	if err := f.Set(i, doc); err != nil {
		panic(err)
	}
}

// loses says whether this swap loses to a rival, who then changes row i.
func (f *fakeStore) loses(i int) bool {
	if f.w.inLock || f.w.lose <= 0 {
		return false
	}
	f.w.lose--
	f.w.lost++
	if i >= 0 {
		rival := f.w.rival
		if rival == nil {
			rival = func(d bson.D) bson.D {
				n, _ := lookupField(d, "rival")
				c, _ := n.(int32)
				return withField(d, "rival", c+1)
			}
		}
		f.set(i, rival(f.Rows[i].Doc))
	}
	return true
}

// withField is d with field k set to v.
func withField(d bson.D, k string, v any) bson.D {
	out := append(bson.D(nil), d...)
	for i, e := range out {
		if e.Key == k {
			out[i].Value = v
			return out
		}
	}
	return append(out, bson.E{Key: k, Value: v})
}

func (f *fakeStore) Collection(_ context.Context, _ storage.On, db, name string) (*storage.Collection, error) {
	if f.w.missing {
		return nil, &storage.Error{Code: storage.ErrNamespaceNotFound, Msg: "ns does not exist: " + db + "." + name}
	}
	if f.w.col == nil {
		f.w.col = testCol()
	}
	return f.w.col, nil
}

func (f *fakeStore) CollectionForWrite(ctx context.Context, on storage.On, db, name string) (*storage.Collection, error) {
	if f.w.missing {
		f.w.missing = false
		f.w.created++
	}
	return f.Collection(ctx, on, db, name)
}

func (f *fakeStore) Get(_ context.Context, on storage.On, _ *storage.Collection, key []byte) (*storage.Row, error) {
	f.on = append(f.on, on)
	f.w.gets++
	return f.Table.Get(key), nil
}

func (f *fakeStore) Insert(_ context.Context, on storage.On, _ *storage.Collection, docs []storage.Doc, ordered bool) (int, []storage.WriteError, error) {
	f.on = append(f.on, on)
	if f.w.rivalInsert != nil {
		d := f.w.rivalInsert
		f.w.rivalInsert = nil
		r, err := f.Append(d)
		if err != nil {
			return 0, nil, err
		}
		f.remember(r)
	}
	return f.Table.Insert(docs, ordered, f.remember)
}

func (f *fakeStore) remember(r exectest.Row) {
	if !f.w.remember {
		return
	}
	if f.w.versions == nil {
		f.w.versions = map[string][]byte{}
	}
	f.w.versions[string(r.Key)] = r.Raw
}

func (f *fakeStore) Replace(_ context.Context, on storage.On, _ *storage.Collection, key, old []byte, newDoc storage.Doc) (bool, error) {
	f.on = append(f.on, on)
	f.w.replaces++
	if f.w.inLock {
		f.w.lockedWrites++
	}
	i := f.Find(key)
	if f.loses(i) {
		return false, nil
	}
	ok, err := f.Swap(i, old, newDoc.D)
	if ok {
		f.remember(f.Rows[i])
	}
	return ok, err
}

func (f *fakeStore) Delete(_ context.Context, on storage.On, _ *storage.Collection, rows []storage.Row) (int64, error) {
	f.on = append(f.on, on)
	if f.w.inLock {
		f.w.lockedWrites++
	}
	var n int64
	for _, r := range rows {
		if !f.loses(f.Find(r.Key)) && f.DeleteIfHolds(r) {
			n++
		}
	}
	return n, nil
}

// lockedOn is the On a fake row lock hands its fn: it marks the work as
// done under the lock.
var lockedOn = storage.On{Async: true}

func (f *fakeStore) WithRowLocked(_ context.Context, _ storage.On, _ *storage.Collection, key []byte, fn func(storage.On, *storage.Row) error) error {
	f.w.locks++
	f.w.inLock = true
	defer func() { f.w.inLock = false }()
	return fn(lockedOn, f.Table.Get(key))
}

func (f *fakeStore) Hot(*storage.Collection, []byte) bool { return f.w.hot }

func (f *fakeStore) LastWritten(_ *storage.Collection, key []byte) []byte {
	return f.w.versions[string(key)]
}

var _ Store = (*fakeStore)(nil)

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustMarshal(t *testing.T, d bson.D) []byte {
	t.Helper()
	raw, err := bsonx.Marshal(d)
	mustNoErr(t, err)
	return raw
}
