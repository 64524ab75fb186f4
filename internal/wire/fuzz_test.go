package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// fuzzMaxSize keeps every fuzz input's allocations small; the size limits
// themselves are covered by TestMalformed and TestLimitsAccepted.
const fuzzMaxSize = 1 << 16

func FuzzReadMessage(f *testing.F) {
	for _, tc := range goldenCases {
		f.Add(readGolden(f, tc.file))
	}
	for _, tc := range malformedCases(f, false) {
		f.Add(tc.input)
	}
	ping := marshal(f, bson.D{{Key: "ping", Value: int32(1)}})
	f.Add(withChecksum(opMsg(0, bodySection(ping), seqSection("documents", ping, ping))))
	f.Add(cat(readGolden(f, "pymongo-insert-many.bin"), readGolden(f, "godriver-ismaster-opquery.bin")))

	f.Fuzz(func(t *testing.T, data []byte) {
		r := reader(data)
		// Several messages per input exercise resynchronisation after
		// non-fatal errors.
		for range 4 {
			m, err := ReadMessage(r, fuzzMaxSize)
			if err == io.EOF {
				return
			}
			if err != nil {
				var fe *FrameError
				if !errors.As(err, &fe) || fe.Msg == "" || fe.Code == 0 {
					t.Fatalf("error %v (%T) is not a complete *FrameError", err, err)
				}
				if fe.Fatal {
					return
				}
				continue
			}
			checkReencode(t, m)
		}
	})
}

// checkReencode asserts that a parsed message re-encodes, re-parses, and
// yields the same command, and that re-encoding is stable.
func checkReencode(t *testing.T, m *Message) {
	if (m.Msg == nil) == (m.Query == nil) {
		t.Fatalf("want exactly one of Msg and Query: %+v", m)
	}
	enc, err := m.Append(nil)
	if err != nil {
		t.Fatalf("Append of a parsed message: %v", err)
	}
	m2, err := ReadMessage(reader(enc), fuzzMaxSize)
	if err != nil {
		t.Fatalf("re-parse of %x: %v", enc, err)
	}
	enc2, err := m2.Append(nil)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("re-encoding not stable (%v):\n%x\n%x", err, enc, enc2)
	}
	if m.Query != nil {
		q, q2 := m.Query, m2.Query
		if q2 == nil || q.Flags != q2.Flags || q.FullCollectionName != q2.FullCollectionName ||
			q.NumberToSkip != q2.NumberToSkip || q.NumberToReturn != q2.NumberToReturn ||
			!bytes.Equal(q.Query, q2.Query) || !bytes.Equal(q.ReturnFieldsSelector, q2.ReturnFieldsSelector) {
			t.Fatalf("OP_QUERY changed: %+v -> %+v", q, q2)
		}
		var d bson.D
		if err := bson.Unmarshal(q.Query, &d); err != nil {
			t.Fatalf("validated query does not decode: %v", err)
		}
		return
	}
	cmd, err := m.Msg.Command()
	cmd2, err2 := m2.Msg.Command()
	if err != nil {
		// Validation must leave only the body/sequence name clash for
		// Command to find; anything else means the validator let through a
		// document the decoder rejects.
		me, ok := mongoerr.As(err)
		if !ok || me.Code != codeSequenceDuplicatesBody {
			t.Fatalf("Command on a validated message: %v", err)
		}
		if err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("Command error changed: %v -> %v", err, err2)
		}
		return
	}
	if err2 != nil {
		t.Fatalf("re-parsed Command: %v", err2)
	}
	b1, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatalf("marshal command: %v", err)
	}
	b2, err := bson.Marshal(cmd2)
	if err != nil || !bytes.Equal(b1, b2) {
		t.Fatalf("command changed (%v):\n%v\n%v", err, cmd, cmd2)
	}
}
