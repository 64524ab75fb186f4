package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func TestWriteMsgRoundTrip(t *testing.T) {
	body := marshal(t, bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(3)}})
	for _, flags := range []uint32{0, FlagMoreToCome, FlagExhaustAllowed, FlagChecksumPresent | FlagMoreToCome} {
		var buf bytes.Buffer
		if err := WriteMsg(&buf, 7, 42, flags, body); err != nil {
			t.Fatal(err)
		}
		want := 16 + 4 + 1 + len(body)
		if flags&FlagChecksumPresent != 0 {
			want += 4
		}
		if buf.Len() != want {
			t.Fatalf("flags %#x: wrote %d bytes, want %d", flags, buf.Len(), want)
		}
		m, err := ReadMessage(reader(buf.Bytes()), MaxMessageSize)
		if err != nil {
			t.Fatalf("flags %#x: %v", flags, err)
		}
		wantHdr := Header{Length: int32(want), RequestID: 7, ResponseTo: 42, OpCode: OpCodeMsg}
		if m.Header != wantHdr || m.Msg.Flags != flags || !bytes.Equal(m.Msg.Body, body) || len(m.Msg.Sequences) != 0 {
			t.Fatalf("flags %#x: got header %+v msg %+v", flags, m.Header, m.Msg)
		}
	}
}

func TestWriteMsgRejectsBadBody(t *testing.T) {
	good := marshal(t, bson.D{{Key: "ok", Value: 1.0}})
	bad := [][]byte{nil, {5, 0, 0}, append(u32(99), good[4:]...), append(good[:len(good)-1:len(good)-1], 1)}
	for _, b := range bad {
		var buf bytes.Buffer
		if err := WriteMsg(&buf, 1, 2, 0, b); err == nil {
			t.Errorf("WriteMsg(%x) succeeded", b)
		}
		if buf.Len() != 0 {
			t.Errorf("WriteMsg(%x) wrote %d bytes despite the error", b, buf.Len())
		}
	}
}

func TestWriteReplyLayout(t *testing.T) {
	d1 := marshal(t, bson.D{{Key: "ismaster", Value: true}, {Key: "ok", Value: 1.0}})
	d2 := marshal(t, bson.D{{Key: "x", Value: "y"}})
	var buf bytes.Buffer
	if err := WriteReply(&buf, 9, 3, 8, d1, d2); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	le := binary.LittleEndian
	if got, want := len(b), 16+20+len(d1)+len(d2); got != want {
		t.Fatalf("length %d, want %d", got, want)
	}
	if int(le.Uint32(b[0:])) != len(b) || le.Uint32(b[4:]) != 9 || le.Uint32(b[8:]) != 3 || le.Uint32(b[12:]) != 1 {
		t.Fatalf("header %x", b[:16])
	}
	if flags, cursor, from, n := le.Uint32(b[16:]), le.Uint64(b[20:]), le.Uint32(b[28:]), le.Uint32(b[32:]); flags != 8 || cursor != 0 || from != 0 || n != 2 {
		t.Fatalf("responseFlags %d cursorID %d startingFrom %d numberReturned %d", flags, cursor, from, n)
	}
	if !bytes.Equal(b[36:36+len(d1)], d1) || !bytes.Equal(b[36+len(d1):], d2) {
		t.Fatalf("documents %x", b[36:])
	}
	if err := WriteReply(&buf, 1, 1, 0, []byte{1, 2}); err == nil {
		t.Fatal("WriteReply accepted a broken document")
	}
}

func TestChecksumVerified(t *testing.T) {
	body := marshal(t, bson.D{{Key: "ping", Value: int32(1)}, {Key: "$db", Value: "admin"}})
	good := withChecksum(frame(OpCodeMsg, 5, u32(0), bodySection(body)))

	m, err := ReadMessage(reader(good), MaxMessageSize)
	if err != nil {
		t.Fatalf("valid checksum rejected: %v", err)
	}
	if m.Msg.Flags != FlagChecksumPresent || !bytes.Equal(m.Msg.Body, body) {
		t.Fatalf("parsed %+v", m.Msg)
	}
	// WriteMsg's checksum must be the one computed by hand.
	var buf bytes.Buffer
	if err := WriteMsg(&buf, 5, 0, FlagChecksumPresent, body); err != nil || !bytes.Equal(buf.Bytes(), good) {
		t.Fatalf("WriteMsg = %x (%v), want %x", buf.Bytes(), err, good)
	}

	for _, at := range []int{len(good) - 1, 20, 4} { // checksum, body, request id
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		_, err := ReadMessage(reader(bad), MaxMessageSize)
		fe := asFrameError(t, err)
		if !fe.Fatal || fe.Code != codeChecksumMismatch || !contains(fe.Msg, "checksum") {
			t.Fatalf("byte %d flipped: %+v", at, fe)
		}
	}
}

func TestCRC32CKnownAnswer(t *testing.T) {
	// The standard CRC-32C check value; guards against IEEE being used.
	if got := crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)); got != 0xE3069283 {
		t.Fatalf("crc32c = %#x", got)
	}
}

func TestSequencesRoundTrip(t *testing.T) {
	body := marshal(t, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"}})
	u1 := marshal(t, bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}}})
	x := marshal(t, bson.D{{Key: "k", Value: bson.A{"v", int64(2)}}})
	raw := frame(OpCodeMsg, 1, u32(0), bodySection(body), seqSection("updates", u1), seqSection("extra", x, x), seqSection("empty"))
	_, err := ReadMessage(reader(raw), MaxMessageSize)
	if fe := asFrameError(t, err); !fe.Fatal || fe.Code != codeTooManyDocumentSequences {
		t.Fatalf("3 sequences: %+v", fe)
	}

	raw = frame(OpCodeMsg, 1, u32(0), seqSection("updates", u1), bodySection(body), seqSection("empty"))
	m, err := ReadMessage(reader(raw), MaxMessageSize)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Msg.Command()
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{
		{Key: "update", Value: "c"}, {Key: "$db", Value: "d"},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}}}}},
		{Key: "empty", Value: bson.A{}},
	}
	if got, exp := marshal(t, cmd), marshal(t, want); !bytes.Equal(got, exp) {
		t.Fatalf("command = %v, want %v", cmd, want)
	}
	// Append writes the body first, so the bytes differ from the input but
	// the command must not.
	enc, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != len(raw) || bytes.Equal(enc, raw) {
		t.Fatalf("re-encoding should reorder sections only: %x", enc)
	}
	m2, err := ReadMessage(reader(enc), MaxMessageSize)
	if err != nil {
		t.Fatal(err)
	}
	cmd2, err := m2.Msg.Command()
	if err != nil || !bytes.Equal(marshal(t, cmd2), marshal(t, want)) {
		t.Fatalf("re-parsed command = %v (%v)", cmd2, err)
	}
}

func TestCommandSequenceDuplicatesBody(t *testing.T) {
	body := marshal(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}})
	doc := marshal(t, bson.D{{Key: "_id", Value: int32(1)}})
	m, err := ReadMessage(reader(frame(OpCodeMsg, 1, u32(0), bodySection(body), seqSection("documents", doc))), MaxMessageSize)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Msg.Command()
	me, ok := mongoerr.As(err)
	if !ok || me.Code != codeSequenceDuplicatesBody || !contains(me.Msg, `"documents" duplicates a body field`) {
		t.Fatalf("Command error = %v", err)
	}
}

func TestStreamOfMessages(t *testing.T) {
	ping := marshal(t, bson.D{{Key: "ping", Value: int32(1)}})
	var stream []byte
	stream = append(stream, frame(OpCodeMsg, 1, u32(0), bodySection(ping))...)
	// An OP_INSERT (unsupported) in the middle is skipped whole.
	stream = append(stream, frame(OpCodeInsert, 2, u32(0), []byte("db.c\x00"), ping)...)
	stream = append(stream, readGolden(t, "godriver-ismaster-opquery.bin")...)
	stream = append(stream, frame(OpCodeMsg, 4, u32(FlagMoreToCome), bodySection(ping))...)

	r := reader(stream)
	var got []string
	for {
		m, err := ReadMessage(r, MaxMessageSize)
		if err == io.EOF {
			break
		}
		var fe *FrameError
		switch {
		case errors.As(err, &fe) && !fe.Fatal && fe.Header != nil:
			got = append(got, "error:"+fe.Header.OpCode.String())
		case err != nil:
			t.Fatalf("after %v: %v", got, err)
		default:
			got = append(got, m.Header.OpCode.String())
		}
	}
	want := []string{"OP_MSG", "error:OP_INSERT", "OP_QUERY", "OP_MSG"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestReadErrorIsWrapped(t *testing.T) {
	boom := errors.New("connection reset")
	// A header announcing 40 body bytes, then the connection fails.
	hdr := frame(OpCodeMsg, 1, make([]byte, 40))[:16]
	r := reader(nil)
	r.Reset(io.MultiReader(bytes.NewReader(hdr), errReader{boom}))
	_, err := ReadMessage(r, MaxMessageSize)
	fe := asFrameError(t, err)
	if !fe.Fatal || !errors.Is(err, boom) || fe.Header == nil || fe.Header.Length != 56 {
		t.Fatalf("got %+v", fe)
	}
	if me := fe.Mongo(); me.Code != mongoerr.ProtocolError || me.Cause != boom {
		t.Fatalf("Mongo() = %+v", me)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestOpCodeString(t *testing.T) {
	for op, want := range map[OpCode]string{OpCodeMsg: "OP_MSG", OpCodeQuery: "OP_QUERY", OpCodeReply: "OP_REPLY", OpCodeCompressed: "OP_COMPRESSED", 1234: "opcode 1234"} {
		if got := op.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int32(op), got, want)
		}
	}
}

func asFrameError(t testing.TB, err error) *FrameError {
	t.Helper()
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FrameError", err, err)
	}
	return fe
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
