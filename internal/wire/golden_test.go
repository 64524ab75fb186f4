package wire

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

type goldenCase struct {
	file    string
	op      OpCode
	flags   uint32
	command string // first key of the command (or query) document
	db      string // $db of an OP_MSG
	seqID   string // identifier of the single sequence, if any
	seqDocs int
}

var goldenCases = []goldenCase{
	{file: "pymongo-hello.bin", op: OpCodeMsg, command: "ismaster", db: "admin"},
	{file: "pymongo-ping.bin", op: OpCodeMsg, command: "ping", db: "testdb"},
	{file: "pymongo-insert-many.bin", op: OpCodeMsg, command: "insert", db: "testdb", seqID: "documents", seqDocs: 3},
	{file: "pymongo-find.bin", op: OpCodeMsg, command: "find", db: "testdb"},
	{file: "pymongo-end-sessions.bin", op: OpCodeMsg, command: "endSessions", db: "admin"},
	{file: "godriver-insert-many.bin", op: OpCodeMsg, command: "insert", db: "testdb", seqID: "documents", seqDocs: 2},
	{file: "godriver-ismaster-opquery.bin", op: OpCodeQuery, flags: 4, command: "isMaster"},
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenFrames(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.file, func(t *testing.T) {
			raw := readGolden(t, tc.file)
			r := reader(raw)
			m, err := ReadMessage(r, MaxMessageSize)
			if err != nil {
				t.Fatalf("ReadMessage: %v", err)
			}
			if m.Header.OpCode != tc.op || int(m.Header.Length) != len(raw) || m.Header.ResponseTo != 0 {
				t.Fatalf("header = %+v, want opcode %v length %d", m.Header, tc.op, len(raw))
			}
			if _, err := ReadMessage(r, MaxMessageSize); err != io.EOF {
				t.Fatalf("second ReadMessage = %v, want io.EOF", err)
			}

			switch tc.op {
			case OpCodeMsg:
				checkGoldenMsg(t, tc, m)
			case OpCodeQuery:
				checkGoldenQuery(t, tc, m)
			}

			// Both drivers put the body before any sequence, which is the
			// order Append writes, so re-encoding must reproduce the capture.
			again, err := m.Append(nil)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if !bytes.Equal(again, raw) {
				t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", again, raw)
			}
		})
	}
}

func checkGoldenMsg(t *testing.T, tc goldenCase, m *Message) {
	t.Helper()
	if m.Query != nil || m.Msg == nil {
		t.Fatalf("want only Msg set, got %+v", m)
	}
	if m.Msg.Flags != tc.flags {
		t.Errorf("flags = %#x, want %#x", m.Msg.Flags, tc.flags)
	}
	cmd, err := m.Msg.Command()
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	if cmd[0].Key != tc.command {
		t.Errorf("command = %q, want %q", cmd[0].Key, tc.command)
	}
	if db := lookup(cmd, "$db"); db != tc.db {
		t.Errorf("$db = %v, want %q", db, tc.db)
	}
	if tc.seqID == "" {
		if len(m.Msg.Sequences) != 0 {
			t.Fatalf("unexpected sequences %+v", m.Msg.Sequences)
		}
		return
	}
	if len(m.Msg.Sequences) != 1 || m.Msg.Sequences[0].Identifier != tc.seqID || len(m.Msg.Sequences[0].Documents) != tc.seqDocs {
		t.Fatalf("sequences = %+v, want one %q with %d documents", m.Msg.Sequences, tc.seqID, tc.seqDocs)
	}
	// The sequence becomes the last field of the command, documents in
	// order, each a bson.D.
	last := cmd[len(cmd)-1]
	arr, ok := last.Value.(bson.A)
	if last.Key != tc.seqID || !ok || len(arr) != tc.seqDocs {
		t.Fatalf("last command field = %v, want %q array of %d", last, tc.seqID, tc.seqDocs)
	}
	for i, v := range arr {
		d, ok := v.(bson.D)
		if !ok {
			t.Fatalf("%s[%d] is %T, want bson.D", tc.seqID, i, v)
		}
		if id := lookup(d, "_id"); id != int32(i+1) {
			t.Errorf("%s[%d]._id = %v, want %d", tc.seqID, i, id, i+1)
		}
	}
}

func checkGoldenQuery(t *testing.T, tc goldenCase, m *Message) {
	t.Helper()
	q := m.Query
	if m.Msg != nil || q == nil {
		t.Fatalf("want only Query set, got %+v", m)
	}
	if q.Flags != tc.flags || q.FullCollectionName != "admin.$cmd" || q.NumberToSkip != 0 || q.NumberToReturn != -1 || q.ReturnFieldsSelector != nil {
		t.Fatalf("query = %+v", q)
	}
	var d bson.D
	if err := bson.Unmarshal(q.Query, &d); err != nil {
		t.Fatal(err)
	}
	if d[0].Key != tc.command || lookup(d, "helloOk") != true {
		t.Fatalf("query document = %v", d)
	}
}

func lookup(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}
