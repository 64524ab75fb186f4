package changes

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
)

func raw(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bsonx.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tuple(vals ...[]byte) *pglogrepl.TupleData {
	td := &pglogrepl.TupleData{}
	for _, v := range vals {
		if v == nil {
			td.Columns = append(td.Columns, &pglogrepl.TupleDataColumn{DataType: 'n'})
			continue
		}
		td.Columns = append(td.Columns, &pglogrepl.TupleDataColumn{DataType: 'b', Data: v, Length: uint32(len(v))})
	}
	return td
}

func rel(id uint32, ns, name string, cols ...string) *pglogrepl.RelationMessage {
	m := &pglogrepl.RelationMessage{RelationID: id, Namespace: ns, RelationName: name}
	for _, c := range cols {
		m.Columns = append(m.Columns, &pglogrepl.RelationMessageColumn{Name: c})
	}
	return m
}

// decodeAll feeds messages to a fresh decoder and returns its changes.
func decodeAll(t *testing.T, msgs ...pglogrepl.Message) []Change {
	t.Helper()
	d := NewDecoder(func(tbl string) (Namespace, bool, error) {
		if tbl == "c1_shop_orders" {
			return Namespace{"shop", "orders"}, true, nil
		}
		return Namespace{}, false, nil
	})
	for _, m := range msgs {
		if err := d.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	return d.Take()
}

func TestDecoderDocumentChanges(t *testing.T) {
	v1 := raw(t, bson.D{{Key: "_id", Value: int32(7)}, {Key: "a", Value: int32(1)}})
	v2 := raw(t, bson.D{{Key: "_id", Value: int32(7)}, {Key: "a", Value: int32(2)}})
	when := time.Unix(1700000000, 0)
	chs := decodeAll(t,
		rel(1, DataSchema, "c1_shop_orders", "_id", "doc"),
		rel(2, DataSchema, "c1_shop_orders_u1", "k", "id"), // index entries: ignored
		rel(3, "public", "other", "x"),
		&pglogrepl.BeginMessage{FinalLSN: 0x100, CommitTime: when},
		&pglogrepl.InsertMessage{RelationID: 1, Tuple: tuple([]byte("k"), v1)},
		&pglogrepl.InsertMessage{RelationID: 2, Tuple: tuple([]byte("k"), []byte("k"))},
		&pglogrepl.InsertMessage{RelationID: 3, Tuple: tuple([]byte("x"))},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k"), v1), NewTuple: tuple([]byte("k"), v2)},
		&pglogrepl.DeleteMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k"), v2)},
		&pglogrepl.CommitMessage{CommitLSN: 0x100},
	)
	if len(chs) != 3 {
		t.Fatalf("got %d changes, want 3: %+v", len(chs), chs)
	}
	for i, want := range []Kind{Insert, Update, Delete} {
		c := chs[i]
		if c.Kind != want || c.DB != "shop" || c.Coll != "orders" || c.Pos != (Position{0x100, uint32(i)}) || !c.Time.Equal(when) {
			t.Errorf("change %d = %+v, want %v in shop.orders at index %d", i, c, want, i)
		}
	}
	if string(chs[1].Old) != string(v1) || string(chs[1].New) != string(v2) || chs[2].New != nil {
		t.Error("old and new documents not carried")
	}
}

// Updates that leave the document as it was (an index build writing its
// key column) are not changes: neither when the document comes again with
// the same bytes nor when it is not sent (an unchanged TOAST value), which
// decoding used to refuse, wedging every stream.
func TestDecoderSkipsUpdatesOfKeyColumnsOnly(t *testing.T) {
	v1 := raw(t, bson.D{{Key: "_id", Value: int32(7)}, {Key: "a", Value: int32(1)}})
	toasted := tuple([]byte("k"), nil, []byte("key"))
	toasted.Columns[1] = &pglogrepl.TupleDataColumn{DataType: 'u'}
	var asked []string
	d := NewDecoder(func(tbl string) (Namespace, bool, error) {
		asked = append(asked, tbl)
		return Namespace{"shop", "orders"}, true, nil
	})
	for _, m := range []pglogrepl.Message{
		rel(1, DataSchema, "c1_shop_orders", "_id", "doc", "k_1"),
		rel(2, DataSchema, "c1_shop_orders_u1", "k", "id"),
		&pglogrepl.BeginMessage{FinalLSN: 0x100},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k"), v1, nil), NewTuple: tuple([]byte("k"), v1, []byte("key"))},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k"), v1, nil), NewTuple: toasted},
		&pglogrepl.InsertMessage{RelationID: 2, Tuple: tuple([]byte("key"), []byte("k"))},
		&pglogrepl.CommitMessage{},
	} {
		if err := d.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Take(); len(got) != 0 {
		t.Errorf("got %+v, want no change", got)
	}
	if len(asked) != 0 {
		t.Errorf("asked the catalog about %v: index entries and unchanged documents need no name", asked)
	}
}

// A slot's reads carry committed transactions only: a change is released
// as soon as its row is decoded, with its commit's position and time, so a
// large transaction is never held whole.
func TestDecoderReleasesChangesAsDecoded(t *testing.T) {
	d := NewDecoder(nil)
	d.known["t"] = Namespace{"a", "b"}
	for _, m := range []pglogrepl.Message{
		rel(1, DataSchema, "t", "_id", "doc"),
		&pglogrepl.BeginMessage{FinalLSN: 5},
		&pglogrepl.InsertMessage{RelationID: 1, Tuple: tuple([]byte("k"), raw(t, bson.D{{Key: "_id", Value: "x"}}))},
	} {
		if err := d.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	got := d.Take()
	if len(got) != 1 || got[0].Pos != (Position{LSN: 5}) || got[0].DB != "a" {
		t.Fatalf("the decoded row: %+v", got)
	}
	if got := d.Take(); len(got) != 0 {
		t.Fatalf("a change was released twice: %+v", got)
	}
}

func TestDecoderCatalogDropAndRename(t *testing.T) {
	cols := []string{"db", "name", "tbl", "uuid", "indexes"}
	row := func(db, name, tbl string) *pglogrepl.TupleData {
		return tuple([]byte(db), []byte(name), []byte(tbl), []byte("u"), []byte("[]"))
	}
	doc := raw(t, bson.D{{Key: "_id", Value: int32(1)}})
	chs := decodeAll(t,
		rel(9, CatalogSchema, CatalogTable, cols...),
		rel(1, DataSchema, "c5_x_y", "_id", "doc"),
		&pglogrepl.BeginMessage{FinalLSN: 10},
		&pglogrepl.InsertMessage{RelationID: 9, Tuple: row("x", "y", "c5_x_y")},
		&pglogrepl.InsertMessage{RelationID: 1, Tuple: tuple([]byte("k"), doc)},
		&pglogrepl.CommitMessage{},
		&pglogrepl.BeginMessage{FinalLSN: 20},
		&pglogrepl.UpdateMessage{RelationID: 9, OldTupleType: 'O', OldTuple: row("x", "y", "c5_x_y"), NewTuple: row("x", "z", "c5_x_y")},
		&pglogrepl.InsertMessage{RelationID: 1, Tuple: tuple([]byte("k2"), doc)},
		&pglogrepl.CommitMessage{},
		&pglogrepl.BeginMessage{FinalLSN: 30},
		&pglogrepl.DeleteMessage{RelationID: 9, OldTupleType: 'O', OldTuple: row("x", "z", "c5_x_y")},
		&pglogrepl.CommitMessage{},
	)
	want := []struct {
		kind           Kind
		db, coll, toDB string
		toColl         string
	}{{Insert, "x", "y", "", ""}, {Rename, "x", "y", "x", "z"}, {Insert, "x", "z", "", ""}, {Drop, "x", "z", "", ""}}
	if len(chs) != len(want) {
		t.Fatalf("got %+v", chs)
	}
	for i, w := range want {
		c := chs[i]
		if c.Kind != w.kind || c.DB != w.db || c.Coll != w.coll || c.ToDB != w.toDB || c.ToColl != w.toColl {
			t.Errorf("change %d = %+v, want %+v", i, c, w)
		}
	}
}

func TestDiff(t *testing.T) {
	old := bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}, {Key: "gone", Value: true},
		{Key: "sub", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "y", Value: int32(2)}}},
		{Key: "arr", Value: bson.A{int32(1), int32(2)}}, {Key: "same", Value: "s"}}
	new := bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: 1.0}, {Key: "sub", Value: bson.D{{Key: "y", Value: int32(3)}}},
		{Key: "arr", Value: bson.A{int32(1), int32(2), int32(3)}}, {Key: "same", Value: "s"}, {Key: "added", Value: bson.D{}}}
	got := Diff(old, new)
	want := bson.D{
		{Key: "updatedFields", Value: bson.D{{Key: "a", Value: 1.0}, {Key: "sub.y", Value: int32(3)}, {Key: "arr", Value: bson.A{int32(1), int32(2), int32(3)}}, {Key: "added", Value: bson.D{}}}},
		{Key: "removedFields", Value: bson.A{"sub.x", "gone"}},
		{Key: "truncatedArrays", Value: bson.A{}},
	}
	if !sameValue(got, want) {
		t.Errorf("Diff = %v\nwant   %v", got, want)
	}
}

func TestTokens(t *testing.T) {
	ps := []Position{{0, 0}, {1, 0}, {1, 1}, {1, hwm}, {0x1_0000_0000, 0}}
	for i, p := range ps {
		tok := p.Token()
		back, inv, err := ParseToken(tok)
		if err != nil || back != p || inv {
			t.Fatalf("token %v of %v read back as %v, %v", tok, p, back, err)
		}
		if i > 0 {
			prev := ps[i-1].Token()[0].Value.(string)
			if !(prev < tok[0].Value.(string)) || !ps[i-1].Less(p) {
				t.Errorf("tokens of %v and %v out of order", ps[i-1], p)
			}
		}
	}
	inv := invalidateToken(Position{1, 1})
	if p, isInv, err := ParseToken(inv); err != nil || !isInv || p != (Position{1, 1}) {
		t.Errorf("invalidate token read as %v, %v, %v", p, isInv, err)
	}
	if s := inv[0].Value.(string); !(Position{1, 1}.Token()[0].Value.(string) < s && s < Position{1, 2}.Token()[0].Value.(string)) {
		t.Error("an invalidate token does not sort between its cause and the next change")
	}
	for _, bad := range []any{"x", bson.D{{Key: "_data", Value: "T1" + "0000000000000001" + "00000001" + "X"}}, bson.D{{Key: "_data", Value: "82ABCDEF"}}, bson.D{{Key: "_data", Value: int32(1)}}, bson.D{{Key: "other", Value: "T1"}}} {
		if _, _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%v) accepted", bad)
		}
	}
}

func TestScope(t *testing.T) {
	ins := &Change{Kind: Insert, DB: "a", Coll: "b"}
	drop := &Change{Kind: Drop, DB: "a", Coll: "b"}
	renTo := &Change{Kind: Rename, DB: "a", Coll: "x", ToDB: "a", ToColl: "b"}
	admin := &Change{Kind: Insert, DB: "admin", Coll: "b"}
	dropDB := &Change{Kind: DropDatabase, DB: "a"}
	coll, db, all := Scope{DB: "a", Coll: "b"}, Scope{DB: "a"}, Scope{Cluster: true}
	for _, tc := range []struct {
		s          Scope
		c          *Change
		match, inv bool
	}{
		{coll, ins, true, false}, {coll, drop, true, true}, {coll, renTo, true, true},
		{coll, &Change{Kind: Insert, DB: "a", Coll: "c"}, false, false},
		{db, ins, true, false}, {db, drop, true, false}, {db, admin, false, false},
		{all, ins, true, false}, {all, admin, false, false}, {all, drop, true, false},
		{coll, dropDB, false, false}, {db, dropDB, true, true}, {all, dropDB, true, false},
	} {
		if got := tc.s.Matches(tc.c); got != tc.match {
			t.Errorf("%+v matches %+v = %v", tc.s, tc.c, got)
		}
		if got := tc.s.Invalidates(tc.c); got != tc.inv {
			t.Errorf("%+v invalidated by %+v = %v", tc.s, tc.c, got)
		}
	}
}

func TestEventShapes(t *testing.T) {
	doc := raw(t, bson.D{{Key: "_id", Value: "k"}, {Key: "v", Value: int32(2)}})
	old := raw(t, bson.D{{Key: "_id", Value: "k"}, {Key: "v", Value: int32(1)}})
	c := &Change{Pos: Position{5, 1}, Time: time.Unix(100, 0), Kind: Update, DB: "d", Coll: "c", Old: old, New: doc}
	ev, err := c.Event(Options{FullDocument: "updateLookup", BeforeChange: "whenAvailable", Lookup: func(db, coll string, id any) (bson.D, error) {
		if db != "d" || coll != "c" || id != "k" {
			t.Errorf("lookup of %s.%s %v", db, coll, id)
		}
		return nil, nil // deleted since: fullDocument null
	}})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for _, e := range ev {
		keys = append(keys, e.Key)
	}
	want := []string{"_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey", "updateDescription", "fullDocumentBeforeChange"}
	if len(keys) != len(want) {
		t.Fatalf("event fields %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("event fields %v, want %v", keys, want)
		}
	}
	if v, _ := lookupField(ev, "fullDocument"); v != nil {
		t.Errorf("fullDocument of a deleted document = %v, want null", v)
	}
	if v, _ := lookupField(ev, "operationType"); v != "update" {
		t.Errorf("operationType %v", v)
	}
	inv := InvalidateEvent(&Change{Pos: Position{5, 1}, Kind: Drop})
	if tok, isInv, _ := ParseToken(inv[0].Value); tok != (Position{5, 1}) || !isInv {
		t.Error("invalidate token does not name its drop")
	}
}

// fakeSlot serves pgoutput messages from memory.
type fakeSlot struct {
	msgs      [][]byte
	lsns      []uint64 // commit LSN of each message's transaction
	confirmed uint64
	current   uint64
	advanced  []uint64
	// onPeek and onAdvance, when set, run once at the start of the next
	// Peek or Advance: what a concurrent request does meanwhile.
	onPeek, onAdvance func()
	// when is the commit time of the transactions txn adds (PostgreSQL's
	// epoch when zero).
	when time.Time
	// peeks counts the reads of the slot.
	peeks int
}

func once(f *func()) {
	if g := *f; g != nil {
		*f = nil
		g()
	}
}

// Peek serves whole transactions from the slot's position on, stopping
// after the one in which n messages have been served, as PostgreSQL does.
func (f *fakeSlot) Peek(_ context.Context, n int, fn func([]byte) bool) error {
	once(&f.onPeek)
	f.peeks++
	served := 0
	for i, m := range f.msgs {
		if f.lsns[i] < f.confirmed {
			continue
		}
		if !fn(m) {
			return nil
		}
		if served++; m[0] == 'C' && served >= n {
			return nil
		}
	}
	return nil
}
func (f *fakeSlot) Advance(_ context.Context, lsn uint64) error {
	once(&f.onAdvance)
	f.confirmed = lsn
	f.advanced = append(f.advanced, lsn)
	return nil
}
func (f *fakeSlot) Confirmed(context.Context) (uint64, error) { return f.confirmed, nil }
func (f *fakeSlot) Current(context.Context) (uint64, error)   { return f.current, nil }
func (f *fakeSlot) Flushed(context.Context) (uint64, error)   { return f.current, nil }
func (f *fakeSlot) Resolve(context.Context, string) (Namespace, bool, error) {
	return Namespace{"d", "c"}, true, nil
}

// txn appends the wire form of a transaction inserting docs at lsn.
func (f *fakeSlot) txn(t *testing.T, lsn uint64, ids ...int32) {
	add := func(b []byte) { f.msgs = append(f.msgs, b); f.lsns = append(f.lsns, lsn) }
	begin := []byte{'B'}
	begin = appendU64(begin, lsn)
	var micros int64
	if !f.when.IsZero() {
		micros = f.when.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()
	}
	begin = appendU64(begin, uint64(micros))
	begin = append(begin, 0, 0, 0, 1)
	add(relationBytes())
	add(begin)
	for _, id := range ids {
		add(insertBytes(raw(t, bson.D{{Key: "_id", Value: id}})))
	}
	commit := []byte{'C', 0}
	commit = appendU64(commit, lsn)
	commit = appendU64(commit, lsn+1)
	commit = appendU64(commit, 0)
	add(commit)
	f.current = lsn + 1
}

func appendU64(b []byte, v uint64) []byte {
	for i := 7; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func relationBytes() []byte { return relBytes(1, "tbl", "_id", "doc") }

// relBytes is the wire form of a relation of tierdb's data schema.
func relBytes(id uint32, name string, cols ...string) []byte {
	b := []byte{'R'}
	b = appendU32(b, id)
	b = append(b, DataSchema+"\x00"+name+"\x00"...)
	b = append(b, 'f', 0, byte(len(cols)))
	for _, c := range cols {
		b = append(b, 0)
		b = append(b, c+"\x00"...)
		b = appendU32(b, 17)
		b = appendU32(b, 0xFFFFFFFF)
	}
	return b
}

func insertBytes(doc []byte) []byte { return insBytes(1, []byte("k"), doc) }

// insBytes is the wire form of a row inserted into relation id.
func insBytes(id uint32, vals ...[]byte) []byte {
	b := []byte{'I'}
	b = appendU32(b, id)
	b = append(b, 'N', 0, byte(len(vals)))
	for _, v := range vals {
		b = append(b, 'b')
		b = appendU32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

func admitAll(context.Context) (func(), error) { return func() {}, nil }

func ids(t *testing.T, chs []Change) []int32 {
	var out []int32
	for _, c := range chs {
		d, err := bsonx.Decode(c.New)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d[0].Value.(int32))
	}
	return out
}

func TestHubFansOutAndAdvancesToTheSlowestStream(t *testing.T) {
	ctx := context.Background()
	slot := &fakeSlot{confirmed: 1, current: 1}
	hub, err := NewHub(ctx, slot, admitAll)
	if err != nil {
		t.Fatal(err)
	}
	fast, _ := hub.Open(ctx, Scope{DB: "d", Coll: "c"}, nil)
	slow, _ := hub.Open(ctx, Scope{DB: "d"}, nil)
	slot.txn(t, 10, 1, 2)
	slot.txn(t, 20, 3)
	got, err := fast.Next(ctx, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("fast stream got %v, %v", got, err)
	}
	if g := ids(t, got); g[0] != 1 || g[2] != 3 {
		t.Fatalf("fast stream got ids %v", g)
	}
	got, _ = slow.Next(ctx, 1)
	if len(got) != 1 || ids(t, got)[0] != 1 {
		t.Fatalf("slow stream got %v", got)
	}
	// The slot moves only as far as the slow stream (in the transaction
	// at 10).
	hub.lastPoll = time.Time{}
	slot.txn(t, 30, 4)
	if got, _ := fast.Next(ctx, 0); len(got) != 1 || ids(t, got)[0] != 4 {
		t.Fatalf("fast stream after more inserts got %v", got)
	}
	if slot.confirmed != 10 {
		t.Errorf("slot at %d, want 10 (the slow stream's transaction)", slot.confirmed)
	}
	got, _ = slow.Next(ctx, 0)
	if g := ids(t, got); len(g) != 3 || g[0] != 2 || g[2] != 4 {
		t.Errorf("slow stream resumed with %v, want [2 3 4]", g)
	}
	// A token older than the slot is history lost.
	if _, err := hub.Open(ctx, Scope{Cluster: true}, &Position{LSN: 5}); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Errorf("opening before the slot: %v, want ChangeStreamHistoryLost", err)
	}
	// Resuming from a token inside the history replays what follows.
	again, err := hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 10, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if g := ids(t, mustNext(t, again)); len(g) != 3 || g[0] != 2 {
		t.Errorf("resumed stream got %v, want [2 3 4]", g)
	}
	fast.Close()
	slow.Close()
	again.Close()
}

// hubWithStream starts a hub on an empty fake slot at LSN 1 with one
// stream open on database "d".
func hubWithStream(t *testing.T) (*fakeSlot, *Hub, *Stream) {
	t.Helper()
	ctx := context.Background()
	slot := &fakeSlot{confirmed: 1, current: 1}
	hub, err := NewHub(ctx, slot, admitAll)
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.Open(ctx, Scope{DB: "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return slot, hub, s
}

func mustNext(t *testing.T, s *Stream) []Change {
	t.Helper()
	chs, err := s.Next(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return chs
}

func isCode(err error, c mongoerr.Code) bool {
	e, ok := mongoerr.As(err)
	return ok && e.Code == c
}

func TestHubRereadsHistoryItTrimmed(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	slot.txn(t, 10, 1, 2, 3)
	if g := ids(t, mustNext(t, a)); len(g) != 3 {
		t.Fatalf("got %v", g)
	}
	hub.lastPoll = time.Time{}
	slot.txn(t, 20, 4)
	if g := ids(t, mustNext(t, a)); len(g) != 1 || g[0] != 4 {
		t.Fatalf("got %v", g)
	}
	// The buffer dropped 1..3 (a passed them) but the slot stayed at the
	// transaction at 10: a stream resuming after 1 gets 2, 3, 4.
	if slot.confirmed != 10 {
		t.Fatalf("slot at %d", slot.confirmed)
	}
	b, err := hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 10, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	hub.lastPoll = time.Time{}
	if g := ids(t, mustNext(t, b)); len(g) != 3 || g[0] != 2 || g[2] != 4 {
		t.Errorf("resumed stream got %v, want [2 3 4]", g)
	}
	hub.lastPoll = time.Time{}
	if g := mustNext(t, a); len(g) != 0 {
		t.Errorf("the first stream got %v again", ids(t, g))
	}
}

func TestDecoderReplacementMessages(t *testing.T) {
	v1 := raw(t, bson.D{{Key: "_id", Value: int32(7)}, {Key: "a", Value: int32(1)}})
	v2 := raw(t, bson.D{{Key: "_id", Value: int32(7)}, {Key: "b", Value: int32(2)}})
	chs := decodeAll(t,
		rel(1, DataSchema, "c1_shop_orders", "_id", "doc"),
		&pglogrepl.BeginMessage{FinalLSN: 0x100},
		&pglogrepl.LogicalDecodingMessage{Transactional: true, Prefix: ReplaceMessagePrefix, Content: []byte("k7")},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k8"), v1), NewTuple: tuple([]byte("k8"), v2)},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k7"), v1), NewTuple: tuple([]byte("k7"), v2)},
		&pglogrepl.UpdateMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k7"), v2), NewTuple: tuple([]byte("k7"), v1)},
		&pglogrepl.CommitMessage{},
	)
	if len(chs) != 3 || chs[0].Kind != Update || chs[1].Kind != Replace || chs[2].Kind != Update {
		t.Fatalf("kinds: %+v", chs)
	}
	ev, err := chs[1].Event(Options{FullDocument: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := lookupField(ev, "operationType"); v != "replace" {
		t.Errorf("operationType %v", v)
	}
	if _, ok := lookupField(ev, "updateDescription"); ok {
		t.Error("a replace event has no updateDescription")
	}
	if v, _ := lookupField(ev, "fullDocument"); !sameValue(v, bson.D{{Key: "_id", Value: int32(7)}, {Key: "b", Value: int32(2)}}) {
		t.Errorf("fullDocument %v", v)
	}
}

func TestHubReportsASlotMovedByAnotherProcess(t *testing.T) {
	ctx := context.Background()
	slot, _, s := hubWithStream(t) // at LSN 1
	slot.txn(t, 10, 1)
	slot.confirmed = 20 // another tierdb advanced the shared slot
	if _, err := s.Next(ctx, 0); !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Fatalf("Next after the slot moved: %v, want ChangeStreamHistoryLost", err)
	}
}

// A stream resuming from history the buffer let go, opened while a read of
// the slot is under way, gets every change after its position: the read's
// changes, taken from after the old end of the buffer, are not appended to
// the buffer the resume emptied.
func TestHubResumeDuringARead(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	slot.txn(t, 10, 1, 2, 3)
	if g := ids(t, mustNext(t, a)); len(g) != 3 {
		t.Fatalf("got %v", g)
	}
	hub.lastPoll = time.Time{}
	slot.txn(t, 20, 4)
	var b *Stream
	slot.onPeek = func() {
		var err error
		if b, err = hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 10, Index: 0}); err != nil {
			t.Fatal(err)
		}
	}
	mustNext(t, a) // reads the slot, and b opens meanwhile
	var got []int32
	for range 3 {
		hub.lastPoll = time.Time{}
		got = append(got, ids(t, mustNext(t, b))...)
	}
	if len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Errorf("resumed stream got %v, want [2 3 4]", got)
	}
}

// A stream resuming from a position the slot is being moved past, opened
// while it moves, is told its history is lost rather than silently missing
// the changes before the slot's new position.
func TestHubResumeDuringAnAdvance(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	slot.txn(t, 10, 1)
	slot.txn(t, 20, 2)
	if g := ids(t, mustNext(t, a)); len(g) != 2 {
		t.Fatalf("got %v", g)
	}
	hub.lastPoll = time.Time{}
	slot.txn(t, 30, 3)
	var err error
	slot.onAdvance = func() {
		_, err = hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 10, Index: 0})
	}
	mustNext(t, a)
	if slot.confirmed != 20 {
		t.Fatalf("slot at %d, want 20", slot.confirmed)
	}
	if !isCode(err, mongoerr.ChangeStreamHistoryLost) {
		t.Errorf("resuming at 10 while the slot moves to 20: %v, want ChangeStreamHistoryLost", err)
	}
}

// A new stream (no resume token) opened while the slot moves past the end
// of the WAL it read starts where the slot is: it has no history to lose.
func TestHubNewStreamWhileTheSlotMoves(t *testing.T) {
	ctx := context.Background()
	slot := &fakeSlot{confirmed: 1, current: 50}
	hub, _ := NewHub(ctx, slot, admitAll)
	hub.lastOpen = time.Now().Add(-2 * Retention) // no stream for long: trim follows the WAL
	var s *Stream
	var err error
	slot.onAdvance = func() {
		slot.current = 40 // what a concurrent Open read before the slot moved to 50
		s, err = hub.Open(ctx, Scope{DB: "d"}, nil)
		slot.current = 50
	}
	if err := hub.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("opening a new stream while the slot moves: %v", err)
	}
	if s.Position() != (Position{LSN: 50, Index: hwm}) {
		t.Errorf("new stream at %+v, want the slot's position 50", s.Position())
	}
}

// A transaction of more rows than a read asks for that makes no change
// (an index build writing key columns, index entries) is passed over, not
// read again and again with every stream held before it.
func TestHubPassesOverATransactionWithoutChanges(t *testing.T) {
	ctx := context.Background()
	slot, hub, a := hubWithStream(t)
	add := func(lsn uint64, b []byte) { slot.msgs = append(slot.msgs, b); slot.lsns = append(slot.lsns, lsn) }
	begin := appendU64(appendU64([]byte{'B'}, 10), 0)
	add(10, relBytes(2, "c1_x_u1", "k", "id"))
	add(10, append(begin, 0, 0, 0, 1))
	for i := range 1500 {
		add(10, insBytes(2, []byte{byte(i), byte(i >> 8)}, []byte("k")))
	}
	add(10, appendU64(appendU64(appendU64([]byte{'C', 0}, 10), 11), 0))
	slot.txn(t, 20, 7)
	var got []int32
	for range 3 {
		hub.lastPoll = time.Time{}
		got = append(got, ids(t, mustNext(t, a))...)
	}
	if len(got) != 1 || got[0] != 7 {
		t.Fatalf("got %v, want [7]", got)
	}
	// The slot leaves the transaction without changes behind, and keeps
	// the one the stream's last event came from, to resume from.
	hub.lastPoll = time.Time{}
	mustNext(t, a)
	if slot.confirmed != 20 {
		t.Errorf("slot at %d, want 20 (the transaction of the last event)", slot.confirmed)
	}
	if _, err := hub.Open(ctx, Scope{DB: "d"}, &Position{LSN: 20, Index: 0}); err != nil {
		t.Errorf("resuming from the last event: %v", err)
	}
}

// A transaction of more rows than a read asks for, consumed by the stream,
// stays in the slot (to resume inside it) and is served again by every
// read: the reads ask for more, and get past it to what follows.
func TestHubGetsPastALargeConsumedTransaction(t *testing.T) {
	slot, hub, a := hubWithStream(t)
	big := make([]int32, 3000)
	for i := range big {
		big[i] = int32(i)
	}
	slot.txn(t, 10, big...)
	got := 0
	for range 5 {
		hub.lastPoll = time.Time{}
		got += len(mustNext(t, a))
	}
	if got != len(big) {
		t.Fatalf("got %d changes of the large transaction, want %d", got, len(big))
	}
	slot.txn(t, 20, 7)
	var after []int32
	for range 3 {
		hub.lastPoll = time.Time{}
		after = append(after, ids(t, mustNext(t, a))...)
	}
	if len(after) != 1 || after[0] != 7 {
		t.Errorf("after the large transaction got %v, want [7]", after)
	}
}
