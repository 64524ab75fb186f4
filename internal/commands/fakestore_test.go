package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/exec/exectest"
	"tierdb/internal/qos"
	"tierdb/internal/storage"
	"tierdb/internal/wire"
)

// fakeStore is the command layer's Store without PostgreSQL: documents,
// collections, indexes and views in memory (exectest.Store); the stats,
// backends, session records and change streams answer as an idle
// single-node server with nothing to measure, or refuse.
type fakeStore struct {
	*exectest.Store
}

var _ Store = fakeStore{}

var errNotModelled = errors.New("not modelled by the fake store")

func (fakeStore) DatabaseStats(context.Context, storage.On, string) (*storage.DatabaseStats, error) {
	return &storage.DatabaseStats{}, nil
}

func (fakeStore) CollectionStats(context.Context, storage.On, *storage.Collection) (*storage.CollectionStats, error) {
	return &storage.CollectionStats{}, nil
}

func (fakeStore) IndexUsage(context.Context, storage.On, *storage.Collection) (map[string]storage.IndexUsage, error) {
	return nil, nil
}

func (fakeStore) Validate(context.Context, storage.On, *storage.Collection) (*storage.Validation, error) {
	return nil, errNotModelled
}

func (fakeStore) AnalyzeScan(context.Context, storage.On, *storage.Collection, storage.ScanParams) (storage.Work, error) {
	return storage.Work{}, errNotModelled
}
func (fakeStore) AnalyzeCount(context.Context, storage.On, *storage.Collection, string, []any) (storage.Work, error) {
	return storage.Work{}, errNotModelled
}

func (fakeStore) Nodes() []*storage.Node { return []*storage.Node{{Name: "fake", Primary: true}} }
func (fakeStore) Position(context.Context, *storage.Node) (storage.WALPosition, error) {
	return storage.WALPosition{}, errNotModelled
}
func (fakeStore) Ready(context.Context) error                                 { return nil }
func (fakeStore) PoolStats() (p [qos.NumTiers][2]int32)                       { return p }
func (fakeStore) BackendPIDs(qos.Tier) []int                                  { return nil }
func (fakeStore) MaxBackends() int                                            { return 100 }
func (fakeStore) AsyncCommits() int64                                         { return 0 }
func (fakeStore) DeferredWrites() (int64, int64)                              { return 0, 0 }
func (fakeStore) WriteConflicts() (int64, int64)                              { return 0, 0 }
func (fakeStore) VersionCacheStats() (hits, misses int64, entries, bytes int) { return 0, 0, 0, 0 }

func (fakeStore) BeginRecorded(context.Context, qos.Tier, storage.SessionKey, int64) (*storage.Txn, *storage.Record, error) {
	return nil, nil, errNotModelled
}
func (fakeStore) BeginWrite(context.Context, qos.Tier, storage.SessionKey, int64, bool) (*storage.Txn, error) {
	return nil, errNotModelled
}
func (fakeStore) LoadRecord(context.Context, qos.Tier, storage.SessionKey) (*storage.Record, error) {
	return nil, nil
}
func (fakeStore) TouchRecords(context.Context, []storage.SessionKey) error  { return nil }
func (fakeStore) DeleteRecords(context.Context, []storage.SessionKey) error { return nil }
func (fakeStore) ReapRecords(context.Context, time.Duration) (int64, error) { return 0, nil }
func (fakeStore) EnableChangeStreams(context.Context) (*storage.ChangeSlot, error) {
	return nil, storage.ErrNoLogicalDecoding
}
func (fakeStore) ChangeStreamsEnabled(context.Context) (bool, error) { return false, nil }

// newFakeHandlers is the command table over an empty fakeStore, with no
// access control, admission or replication, and no TTL monitor; with
// changes the options first (a test's auth registry).
func newFakeHandlers(t *testing.T, with ...func(*Options)) (*Handlers, *exectest.Store) {
	t.Helper()
	st := exectest.NewStore()
	opts := Options{Store: fakeStore{st}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTLInterval: -1}
	for _, f := range with {
		f(&opts)
	}
	h := New(opts)
	t.Cleanup(h.Close)
	return h, st
}

// opMsg encodes cmd as a driver sends it: an OP_MSG whose body is cmd
// and $db, with each of seqs (field names of cmd holding arrays of
// documents: insert's documents, update's updates …) moved out of the
// body into a document sequence.
func opMsg(t *testing.T, db string, cmd bson.D, seqs ...string) []byte {
	t.Helper()
	var body bson.D
	var sections bytes.Buffer
	for _, e := range cmd {
		docs, ok := e.Value.(bson.A)
		if !ok || !slices.Contains(seqs, e.Key) {
			body = append(body, e)
			continue
		}
		var seq bytes.Buffer
		seq.WriteString(e.Key)
		seq.WriteByte(0)
		for _, d := range docs {
			raw, err := bsonx.Marshal(d.(bson.D))
			if err != nil {
				t.Fatal(err)
			}
			seq.Write(raw)
		}
		sections.WriteByte(1)
		sections.Write(binary.LittleEndian.AppendUint32(nil, uint32(4+seq.Len())))
		sections.Write(seq.Bytes())
	}
	raw, err := bsonx.Marshal(append(body, bson.E{Key: "$db", Value: db}))
	if err != nil {
		t.Fatal(err)
	}
	msg := binary.LittleEndian.AppendUint32(nil, 0) // length, set below
	msg = binary.LittleEndian.AppendUint32(msg, 1)  // requestID
	msg = binary.LittleEndian.AppendUint32(msg, 0)  // responseTo
	msg = binary.LittleEndian.AppendUint32(msg, uint32(wire.OpCodeMsg))
	msg = binary.LittleEndian.AppendUint32(msg, 0) // flags
	msg = append(append(msg, 0), raw...)
	msg = append(msg, sections.Bytes()...)
	binary.LittleEndian.PutUint32(msg, uint32(len(msg)))
	return msg
}

// send decodes an OP_MSG as the server does and dispatches its command
// through the table; it returns the reply document as the client decodes
// it.
func send(t *testing.T, h *Handlers, msg []byte) bson.D {
	t.Helper()
	return sendAs(t, h, &Session{ID: 1, Tier: qos.Normal}, msg)
}

// sendAs is send on the connection whose state is s (its user).
func sendAs(t *testing.T, h *Handlers, s *Session, msg []byte) bson.D {
	t.Helper()
	m, err := wire.ReadMessage(bufio.NewReader(bytes.NewReader(msg)), 48<<20)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Msg.Command()
	if err != nil {
		t.Fatal(err)
	}
	db, _ := lookup(cmd, "$db")
	reply := h.Dispatch(context.Background(), &Request{DB: db.(string), Cmd: cmd, Session: s})
	raw, err := bsonx.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	if reply, err = bsonx.Decode(raw); err != nil {
		t.Fatal(err)
	}
	return reply
}

// run sends cmd to db as an OP_MSG, the arrays named seqs as document
// sequences.
func run(t *testing.T, h *Handlers, db string, cmd bson.D, seqs ...string) bson.D {
	t.Helper()
	return send(t, h, opMsg(t, db, cmd, seqs...))
}
