package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

type malformedCase struct {
	name    string
	input   []byte
	maxSize int // 0: MaxMessageSize
	want    string
	fatal   bool
	code    mongoerr.Code
	noHdr   bool // the header itself was not read
}

// doc builds a document by hand around raw element bytes, with a correct
// length prefix and terminator.
func doc(elems ...[]byte) []byte {
	b := u32(0)
	for _, e := range elems {
		b = append(b, e...)
	}
	b = append(b, 0)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// nested is {a: {a: ... {}}} with depth levels below the top document.
func nested(depth int) []byte {
	d := doc()
	for range depth {
		d = doc(cat([]byte{0x03, 'a', 0}, d))
	}
	return d
}

// bigDoc is a document of exactly size bytes (one binary field).
func bigDoc(size int) []byte {
	n := size - 13
	b := make([]byte, 0, size)
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	b = append(b, 0x05, 'b', 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, 0)
	b = append(b, make([]byte, n)...)
	return append(b, 0)
}

func opMsg(flags uint32, sections ...[]byte) []byte {
	return frame(OpCodeMsg, 1, append([][]byte{u32(flags)}, sections...)...)
}

func header(length int32, op OpCode) []byte {
	return cat(u32(uint32(length)), u32(1), u32(0), u32(uint32(op)))
}

func malformedCases(t testing.TB, withLarge bool) []malformedCase {
	ping := marshal(t, bson.D{{Key: "ping", Value: int32(1)}, {Key: "$db", Value: "admin"}})
	pingFrame := opMsg(0, bodySection(ping))
	body := bodySection(ping)
	withBad := func(d []byte) []byte { return opMsg(0, bodySection(d)) }
	seqHead := func(size uint32, rest string) []byte { return cat([]byte{1}, u32(size), []byte(rest)) }
	badSum := withChecksum(pingFrame)
	badSum[len(badSum)-1] ^= 1
	partialSeq := seqSection("documents", ping)
	binary.LittleEndian.PutUint32(partialSeq[1:], uint32(4+10+8)) // ends 8 bytes into the document
	cws := marshal(t, bson.D{{Key: "c", Value: bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "y", Value: int32(1)}}}}})
	cws[7]++ // total length one more than its parts
	q := func(parts ...[]byte) []byte { return frame(OpCodeQuery, 1, parts...) }

	cases := []malformedCase{
		{name: "truncated header", input: pingFrame[:10], want: "truncated message header: got 10 of 16 bytes", fatal: true, noHdr: true},
		{name: "length below header", input: header(12, OpCodeMsg), want: "message length 12 is less than the 16-byte header", fatal: true},
		{name: "negative length", input: header(-5, OpCodeMsg), want: "message length -5 is less than", fatal: true},
		{name: "length over maximum", input: header(70_000_000, OpCodeMsg), want: "message length 70000000 exceeds maximum 48000000", fatal: true},
		{name: "length over caller maximum", input: pingFrame, maxSize: 40, want: "exceeds maximum 40", fatal: true},
		{name: "truncated body", input: pingFrame[:len(pingFrame)-5], want: "truncated message: got", fatal: true},
		{name: "truncated unsupported opcode", input: header(100, OpCodeCompressed), want: "truncated message: got 0 of 84 body bytes", fatal: true},
		{name: "unsupported opcode", input: frame(OpCodeCompressed, 1, u32(2013), u32(20), []byte{0}, make([]byte, 20)), want: "unsupported opcode OP_COMPRESSED", code: mongoerr.ProtocolError},
		{name: "OP_MSG without flags", input: frame(OpCodeMsg, 1, []byte{0, 0}), want: "OP_MSG of 18 bytes has no room for flags", code: mongoerr.ProtocolError},
		{name: "empty OP_MSG", input: opMsg(0), want: "OP_MSG has no body section", code: codeNoBody},
		{name: "section kind 2", input: opMsg(0, body, cat([]byte{2}, ping)), want: "OP_MSG has unknown section kind 2", code: codeUnknownSectionKind},
		{name: "two body sections", input: opMsg(0, body, body), want: "OP_MSG has 2 body sections", code: codeMultipleBodies},
		{name: "only a sequence", input: opMsg(0, seqSection("documents", ping)), want: "OP_MSG has no body section", code: codeNoBody},
		{name: "sequence size overrun", input: opMsg(0, body, seqHead(1000, "documents\x00")), want: "document sequence size 1000 invalid with 14 bytes left", code: mongoerr.ProtocolError},
		{name: "sequence size too small", input: opMsg(0, body, seqHead(3, "ab\x00")), want: "document sequence size 3 invalid", code: mongoerr.ProtocolError},
		{name: "sequence size truncated", input: opMsg(0, body, []byte{1, 9, 0}), want: "document sequence size truncated", code: mongoerr.ProtocolError},
		{name: "sequence identifier unterminated", input: opMsg(0, body, seqHead(7, "abc")), want: "identifier not terminated", code: mongoerr.ProtocolError},
		{name: "sequence identifier empty", input: opMsg(0, body, seqHead(5, "\x00")), want: "empty identifier", code: mongoerr.ProtocolError},
		{name: "sequence document overruns section", input: opMsg(0, body, partialSeq), want: `invalid BSON in OP_MSG sequence "documents" document 0: document length 30 overruns the 8 bytes left`, code: mongoerr.InvalidBSON},
		{name: "duplicate sequences", input: opMsg(0, body, seqSection("documents", ping), seqSection("documents")), want: `two document sequences named "documents"`, code: codeDuplicateSequence},
		{name: "three sequences", input: opMsg(0, body, seqSection("a"), seqSection("b"), seqSection("c")), want: "more than 2 document sequences", fatal: true, code: codeTooManyDocumentSequences},
		{name: "document length lies", input: withBad(cat(u32(100), ping[4:])), want: "invalid BSON in OP_MSG body: document length 100 overruns the 30 bytes left", code: mongoerr.InvalidBSON},
		{name: "document length too small", input: withBad(cat(u32(4), ping[4:])), want: "document length 4 is less than 5", code: mongoerr.InvalidBSON},
		{name: "document length truncated", input: opMsg(0, []byte{0, 9, 0}), want: "document length prefix truncated", code: mongoerr.InvalidBSON},
		{name: "missing terminator", input: withBad(cat(ping[:len(ping)-1], []byte{1})), want: "document does not end with 0x00 at offset 29", code: mongoerr.InvalidBSON},
		{name: "element name unterminated", input: withBad(doc([]byte{0x10, 'a', 'b'})), want: "element name not terminated at offset 5", code: mongoerr.InvalidBSON},
		{name: "string overruns", input: withBad(doc([]byte{0x02, 'a', 0}, u32(50), []byte("x\x00"))), want: "string length 50 invalid with 2 bytes left at offset 7", code: mongoerr.InvalidBSON},
		{name: "string length zero", input: withBad(doc([]byte{0x02, 'a', 0}, u32(0), []byte("x\x00"))), want: "string length 0 invalid", code: mongoerr.InvalidBSON},
		{name: "string unterminated", input: withBad(doc([]byte{0x02, 'a', 0}, u32(2), []byte("xy"))), want: "string not terminated", code: mongoerr.InvalidBSON},
		{name: "element overruns nested document", input: withBad(doc([]byte{0x03, 'a', 0}, u32(8), []byte{0x10, 'b', 0, 0}, []byte{0x10, 'c', 0, 1, 0, 0, 0})), want: "value of type 0x10 needs 4 bytes, 0 left at offset 14", code: mongoerr.InvalidBSON},
		{name: "nested length lies", input: withBad(doc([]byte{0x03, 'a', 0}, u32(40), []byte{0})), want: "document length 40 overruns the 5 bytes left at offset 7", code: mongoerr.InvalidBSON},
		{name: "int32 truncated", input: withBad(doc([]byte{0x10, 'a', 0, 1, 2})), want: "value of type 0x10 needs 4 bytes, 2 left", code: mongoerr.InvalidBSON},
		{name: "unknown element type", input: withBad(doc([]byte{0x20, 'a', 0})), want: "unknown element type 0x20 at offset 4", code: mongoerr.InvalidBSON},
		{name: "bad boolean", input: withBad(doc([]byte{0x08, 'a', 0, 2})), want: "boolean byte is 0x02", code: mongoerr.InvalidBSON},
		{name: "binary overruns", input: withBad(doc([]byte{0x05, 'a', 0}, u32(9), []byte{0, 1})), want: "binary length 9 overruns", code: mongoerr.InvalidBSON},
		{name: "old binary inner length", input: withBad(doc([]byte{0x05, 'a', 0}, u32(6), []byte{2}, u32(9), []byte{1, 2})), want: "old binary inner length 9, want 2", code: mongoerr.InvalidBSON},
		{name: "regex unterminated", input: withBad(doc([]byte{0x0B, 'a', 0, 'x', 0, 'i'})), want: "regex options not terminated", code: mongoerr.InvalidBSON},
		{name: "code with scope mismatch", input: withBad(cws), want: "code with scope length", code: mongoerr.InvalidBSON},
		{name: "nesting too deep", input: withBad(nested(MaxBSONDepth + 1)), want: "nesting deeper than 200 levels", code: mongoerr.InvalidBSON},
		{name: "checksum mismatch", input: badSum, want: "OP_MSG checksum", fatal: true, code: codeChecksumMismatch},
		{name: "checksum flag without room", input: opMsg(FlagChecksumPresent, []byte{0, 0}), want: "no room for a checksum", fatal: true, code: codeChecksumMismatch},
		{name: "unknown required flag bit", input: opMsg(1<<2, body), want: "OP_MSG has unknown required flag bits 0x0004", fatal: true, code: codeIllegalOpMsgFlag},
		{name: "OP_QUERY without flags", input: q([]byte{0}), want: "OP_QUERY of 17 bytes has no room for flags", code: mongoerr.ProtocolError},
		{name: "OP_QUERY name unterminated", input: q(u32(0), []byte("admin.$cmd")), want: "OP_QUERY collection name not terminated", code: mongoerr.ProtocolError},
		{name: "OP_QUERY counters truncated", input: q(u32(0), []byte("admin.$cmd\x00"), u32(0)), want: "OP_QUERY truncated before numberToSkip", code: mongoerr.ProtocolError},
		{name: "OP_QUERY bad query", input: q(u32(0), []byte("a.$cmd\x00"), u32(0), u32(1), ping[:10]), want: "invalid BSON in OP_QUERY query: document length", code: mongoerr.InvalidBSON},
		{name: "OP_QUERY bad selector", input: q(u32(0), []byte("a.$cmd\x00"), u32(0), u32(1), ping, doc([]byte{0x99, 0})), want: "invalid BSON in OP_QUERY returnFieldsSelector: unknown element type 0x99", code: mongoerr.InvalidBSON},
		{name: "OP_QUERY trailing bytes", input: q(u32(0), []byte("a.$cmd\x00"), u32(0), u32(1), ping, ping, []byte{7, 7}), want: "OP_QUERY has 2 trailing bytes", code: mongoerr.ProtocolError},
	}
	if withLarge {
		cases = append(cases, malformedCase{
			name: "document over 16 MiB + 16 KiB", input: withBad(bigDoc(MaxWireDocumentSize + 1)),
			want: "OP_MSG body: document of 16793601 bytes exceeds maximum 16793600", code: mongoerr.BSONObjectTooLarge,
		})
	}
	return cases
}

func TestMalformed(t *testing.T) {
	ping := marshal(t, bson.D{{Key: "ping", Value: int32(1)}})
	next := opMsg(0, bodySection(ping))
	for _, tc := range malformedCases(t, true) {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.input
			if !tc.fatal {
				// A non-fatal error must leave the stream at the next message.
				input = cat(input, next)
			}
			max := tc.maxSize
			if max == 0 {
				max = MaxMessageSize
			}
			r := reader(input)
			m, err := ReadMessage(r, max)
			if m != nil {
				t.Fatalf("got a message %+v with error %v", m, err)
			}
			fe := asFrameError(t, err)
			if !contains(fe.Error(), tc.want) || fe.Msg == "" {
				t.Fatalf("error %q, want it to contain %q", fe.Error(), tc.want)
			}
			if fe.Fatal != tc.fatal {
				t.Fatalf("Fatal = %v, want %v (%v)", fe.Fatal, tc.fatal, fe)
			}
			if tc.code != 0 && fe.Code != tc.code {
				t.Fatalf("Code = %d, want %d (%v)", fe.Code, tc.code, fe)
			}
			if fe.Code == 0 {
				t.Fatalf("no code: %v", fe)
			}
			if (fe.Header == nil) != tc.noHdr {
				t.Fatalf("Header = %+v, want present = %v", fe.Header, !tc.noHdr)
			}
			if fe.Header != nil && fe.Header.RequestID != 1 {
				t.Fatalf("Header = %+v", fe.Header)
			}
			if tc.fatal {
				return
			}
			m, err = ReadMessage(r, max)
			if err != nil || m.Msg == nil || !bytes.Equal(m.Msg.Body, ping) {
				t.Fatalf("message after the bad one: %+v, %v", m, err)
			}
			if _, err := ReadMessage(r, max); err != io.EOF {
				t.Fatalf("want io.EOF at the end, got %v", err)
			}
		})
	}
}

// TestLimitsAccepted checks the edges just inside each limit pass.
func TestLimitsAccepted(t *testing.T) {
	allTypes := bson.D{
		{Key: "double", Value: 1.5}, {Key: "string", Value: "s\x00with nul"}, {Key: "doc", Value: bson.D{{Key: "a", Value: int32(1)}}},
		{Key: "array", Value: bson.A{int64(1), nil, bson.A{}}}, {Key: "bin", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "oldbin", Value: bson.Binary{Subtype: 2, Data: []byte{1, 2, 3}}}, {Key: "emptybin", Value: bson.Binary{Subtype: 0}},
		{Key: "undef", Value: bson.Undefined{}}, {Key: "oid", Value: bson.ObjectID{1, 2, 3}}, {Key: "t", Value: true}, {Key: "f", Value: false},
		{Key: "date", Value: bson.NewDateTimeFromTime(time.Unix(1700000000, 0))}, {Key: "null", Value: nil},
		{Key: "re", Value: bson.Regex{Pattern: "^a", Options: "i"}}, {Key: "dbp", Value: bson.DBPointer{DB: "db.c", Pointer: bson.ObjectID{9}}},
		{Key: "js", Value: bson.JavaScript("f()")}, {Key: "sym", Value: bson.Symbol("s")},
		{Key: "cws", Value: bson.CodeWithScope{Code: "g()", Scope: bson.D{{Key: "x", Value: int32(1)}}}},
		{Key: "i32", Value: int32(-7)}, {Key: "ts", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "i64", Value: int64(1) << 40},
		{Key: "dec", Value: bson.NewDecimal128(1, 2)}, {Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
		{Key: "", Value: "empty key"},
	}
	raw := marshal(t, allTypes)
	cases := map[string][]byte{
		"every BSON type":            opMsg(0, bodySection(raw)),
		"nesting at the limit":       opMsg(0, bodySection(nested(MaxBSONDepth))),
		"optional flag bit":          opMsg(1<<20|FlagExhaustAllowed, bodySection(raw)),
		"empty document sequence":    opMsg(0, bodySection(raw), seqSection("docs")),
		"largest allowed document":   opMsg(0, bodySection(bigDoc(MaxWireDocumentSize))),
		"sequence at the size limit": opMsg(0, bodySection(raw), seqSection("docs", bigDoc(MaxWireDocumentSize), raw)),
	}
	for name, input := range cases {
		m, err := ReadMessage(reader(input), MaxMessageSize)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := m.Msg.Command(); err != nil {
			t.Errorf("%s: Command: %v", name, err)
		}
	}

	m, err := ReadMessage(reader(cases["every BSON type"]), MaxMessageSize)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Msg.Command()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(marshal(t, cmd), raw) {
		t.Fatalf("Command() = %v, want %v", cmd, allTypes)
	}
}

// A message larger than the budget allows is refused once it needs more
// than the budget, and the budget is whole again afterwards; one within it
// is read whole.
func TestBudgetBoundsUnfinishedMessages(t *testing.T) {
	body := make([]byte, 3<<20)
	msg := binary.LittleEndian.AppendUint32(nil, uint32(16+len(body)))
	msg = binary.LittleEndian.AppendUint32(msg, 1)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(OpCodeMsg))
	msg = append(msg, body...)
	b := NewBudget(1 << 20)
	_, err := ReadMessageWithin(bufio.NewReader(bytes.NewReader(msg)), 0, b)
	var fe *FrameError
	if !errors.As(err, &fe) || !fe.Fatal || fe.Code != mongoerr.ExceededMemoryLimit {
		t.Fatalf("a 3 MiB message within a 1 MiB budget: %v, want a fatal ExceededMemoryLimit", err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget holds %d bytes after the message", b.Used())
	}
	_, err = ReadMessageWithin(bufio.NewReader(bytes.NewReader(msg)), 0, NewBudget(4<<20))
	if errors.As(err, &fe) && fe.Code == mongoerr.ExceededMemoryLimit {
		t.Fatalf("refused within the budget: %v", err)
	}
}
