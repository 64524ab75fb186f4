package exec

import (
	"bytes"
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
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

	inLock                               bool
	locks, replaces, lost, inserts, gets int
	lockedWrites                         int // Replace or Delete under a lock
}

func (f *fakeStore) find(key []byte) int {
	for i, r := range f.rows {
		if bytes.Equal(r.key, key) {
			return i
		}
	}
	return -1
}

// set stores doc as row i.
func (f *fakeStore) set(i int, doc bson.D) {
	raw, err := bsonx.Marshal(doc)
	if err != nil {
		panic(err)
	}
	f.rows[i].doc, f.rows[i].raw = doc, raw
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
		f.set(i, rival(f.rows[i].doc))
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
	i := f.find(key)
	if i < 0 {
		return nil, nil
	}
	return &storage.Row{Key: f.rows[i].key, Doc: f.rows[i].raw}, nil
}

func (f *fakeStore) Insert(_ context.Context, on storage.On, _ *storage.Collection, docs []storage.Doc, ordered bool) (int, []storage.WriteError, error) {
	f.on = append(f.on, on)
	if f.w.rivalInsert != nil {
		d := f.w.rivalInsert
		f.w.rivalInsert = nil
		f.insertRow(d)
	}
	n := 0
	var werrs []storage.WriteError
	for i, d := range docs {
		f.w.inserts++
		if f.find(storage.IDKey(d.ID)) >= 0 {
			werrs = append(werrs, storage.WriteError{Index: i, Err: &storage.Error{Code: storage.ErrDuplicateKey, Msg: "_id_"}})
			if ordered {
				break
			}
			continue
		}
		f.insertRow(d.D)
		n++
	}
	return n, werrs, nil
}

func (f *fakeStore) insertRow(d bson.D) {
	seq := int64(1)
	if len(f.rows) > 0 {
		seq = f.rows[len(f.rows)-1].seq + 1
	}
	id, _ := lookupField(d, "_id")
	f.rows = append(f.rows, fakeRow{key: storage.IDKey(id), seq: seq})
	f.set(len(f.rows)-1, d)
	f.remember(f.rows[len(f.rows)-1])
}

func (f *fakeStore) remember(r fakeRow) {
	if !f.w.remember {
		return
	}
	if f.w.versions == nil {
		f.w.versions = map[string][]byte{}
	}
	f.w.versions[string(r.key)] = r.raw
}

func (f *fakeStore) Replace(_ context.Context, on storage.On, _ *storage.Collection, key, old []byte, newDoc storage.Doc) (bool, error) {
	f.on = append(f.on, on)
	f.w.replaces++
	if f.w.inLock {
		f.w.lockedWrites++
	}
	i := f.find(key)
	if f.loses(i) || i < 0 || !bytes.Equal(f.rows[i].raw, old) {
		return false, nil
	}
	f.set(i, newDoc.D)
	f.remember(f.rows[i])
	return true, nil
}

func (f *fakeStore) Delete(_ context.Context, on storage.On, _ *storage.Collection, rows []storage.Row) (int64, error) {
	f.on = append(f.on, on)
	if f.w.inLock {
		f.w.lockedWrites++
	}
	var n int64
	for _, r := range rows {
		i := f.find(r.Key)
		if f.loses(i) || i < 0 || !bytes.Equal(f.rows[i].raw, r.Doc) {
			continue
		}
		f.rows = append(f.rows[:i], f.rows[i+1:]...)
		n++
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
	i := f.find(key)
	if i < 0 {
		return fn(lockedOn, nil)
	}
	return fn(lockedOn, &storage.Row{Key: f.rows[i].key, Doc: f.rows[i].raw})
}

func (f *fakeStore) LastWritten(_ *storage.Collection, key []byte) []byte {
	return f.w.versions[string(key)]
}

var _ Store = (*fakeStore)(nil)

// docs are the stored documents in insertion order.
func (f *fakeStore) docs() []bson.D {
	var out []bson.D
	for _, r := range f.rows {
		out = append(out, r.doc)
	}
	return out
}

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
