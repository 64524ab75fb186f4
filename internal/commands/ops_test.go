package commands

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

func quietHandlers(t *testing.T) *Handlers {
	h := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TestCommands: true})
	t.Cleanup(h.Close)
	return h
}

func replyCode(reply bson.D) int32 {
	c, _ := lookup(reply, "code")
	n, _ := c.(int32)
	return n
}

// awaitOp waits for an operation of the named command to be in process.
func awaitOp(t *testing.T, h *Handlers, name string) *liveOp {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, op := range h.live.snapshot() {
			if op.name == name {
				return op
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no %s operation in process", name)
	return nil
}

// killOp interrupts a request in process: it answers Interrupted, and it
// is no longer listed.
func TestKillOpInterruptsARequest(t *testing.T) {
	h := quietHandlers(t)
	done := make(chan bson.D)
	go func() {
		done <- h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "sleep", Value: 1}, {Key: "millis", Value: int32(60_000)}}})
	}()
	op := awaitOp(t, h, "sleep")
	cur := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "currentOp", Value: 1}, {Key: "opid", Value: op.id}}})
	inprog, _ := lookup(cur, "inprog")
	if a, _ := inprog.(bson.A); len(a) != 1 {
		t.Fatalf("currentOp filtered by opid: %v", cur)
	}
	kill := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: op.id}}})
	if ok, _ := lookup(kill, "ok"); ok != 1.0 {
		t.Fatalf("killOp: %v", kill)
	}
	select {
	case reply := <-done:
		if replyCode(reply) != int32(mongoerr.Interrupted) {
			t.Fatalf("killed request answered %v", reply)
		}
		if name, _ := lookup(reply, "codeName"); name != "Interrupted" {
			t.Fatalf("codeName %v", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed request is still running")
	}
	for _, o := range h.live.snapshot() {
		if o.id == op.id {
			t.Fatal("a finished request is still listed")
		}
	}
}

// maxTimeMS ends a request with MaxTimeMSExpired, not Interrupted.
func TestMaxTimeMSExpires(t *testing.T) {
	h := quietHandlers(t)
	reply := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "sleep", Value: 1}, {Key: "millis", Value: int32(60_000)}, {Key: "maxTimeMS", Value: int32(20)}}})
	if replyCode(reply) != int32(mongoerr.MaxTimeMSExpired) {
		t.Fatalf("reply %v", reply)
	}
}

func TestParseMaxTimeMS(t *testing.T) {
	for _, c := range []struct {
		v    any
		want time.Duration
		err  bool
	}{
		{int32(0), 0, false}, {int64(5), 5 * time.Millisecond, false}, {7.0, 7 * time.Millisecond, false},
		{int32(-1), 0, true}, {1.5, 0, true}, {"1", 0, true}, {int64(1) << 31, 0, true}, {true, 0, true},
		{mustDecimal("3"), 3 * time.Millisecond, false},
	} {
		d, err := parseMaxTimeMS(bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: c.v}})
		if c.err {
			if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.BadValue {
				t.Errorf("maxTimeMS %v: err %v, want BadValue", c.v, err)
			}
			continue
		}
		if err != nil || d != c.want {
			t.Errorf("maxTimeMS %v = %v, %v; want %v", c.v, d, err, c.want)
		}
	}
}

func TestGetCount(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int64
		code mongoerr.Code
	}{
		{int32(3), 3, 0}, {int64(0), 0, 0}, {2.9, 2, 0}, {int32(-1), 0, mongoerr.ValueNegative},
		{-3.5, 0, mongoerr.ValueNegative}, {"2", 0, mongoerr.TypeMismatch}, {nil, 9, 0},
	} {
		n, err := getCount(bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: c.v}}, "find", "skip", 9)
		if c.code != 0 {
			if me, ok := mongoerr.As(err); !ok || me.Code != c.code {
				t.Errorf("skip %v: err %v, want code %d", c.v, err, c.code)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("skip %v = %d, %v; want %d", c.v, n, err, c.want)
		}
	}
}

// A command over the limit is shown truncated, a sensitive one without
// arguments whatever the limit.
func TestShownCommand(t *testing.T) {
	big := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "s", Value: strings.Repeat("x", 4000)}}}}}
	if d, _ := shownCommand("insert", big, maxOpCommandBytes); d[0].Key != "$truncated" {
		t.Fatalf("big command shown as %v", d)
	}
	if d, n := shownCommand("insert", big, maxWholeCommandBytes); d[0].Key != "insert" || len(d) != 2 || n < 4000 {
		t.Fatalf("big command not shown whole: %v (%d bytes)", d, n)
	}
	if d, _ := shownCommand("insert", big, 3000); d[0].Key != "$truncated" {
		t.Fatalf("big command over a 3000-byte limit shown as %v", d)
	}
	pw := bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "secret"}}
	if d, _ := shownCommand("createUser", pw, maxWholeCommandBytes); len(d) != 1 {
		t.Fatalf("createUser shown as %v", d)
	}
	small := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}, {Key: "lsid", Value: bson.D{}}}
	if d, _ := shownCommand("find", small, maxOpCommandBytes); len(d) != 3 {
		t.Fatalf("find shown as %v", d)
	}
}

// A statement interrupted by maxTimeMS or killOp fails the whole write
// command; any other statement's failure is a writeError of the reply.
func TestWriteReplyOfAnInterruptedBatch(t *testing.T) {
	dup := indexedError{0, mongoerr.New(mongoerr.DuplicateKey, "E11000")}
	for _, code := range []mongoerr.Code{mongoerr.MaxTimeMSExpired, mongoerr.Interrupted, mongoerr.ClientDisconnect} {
		reply, err := writeReply(1, []indexedError{dup, {2, mongoerr.New(code, "stop")}})
		if me, ok := mongoerr.As(err); !ok || me.Code != code || reply != nil {
			t.Errorf("interrupted by %v: %v, %v", code, reply, err)
		}
	}
	if _, err := writeReply(1, []indexedError{{1, context.DeadlineExceeded}}); !isInterruption(err) {
		t.Errorf("a statement past its deadline: %v", err)
	}
	reply, err := writeReply(1, []indexedError{dup})
	if err != nil || len(reply) != 2 || reply[1].Key != "writeErrors" {
		t.Fatalf("a duplicate key stays a write error: %v, %v", reply, err)
	}
}

func mustDecimal(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

// slowSource yields one document per batch, after a pause that honours ctx.
type slowSource struct{ pause time.Duration }

func (s *slowSource) Next(ctx context.Context, _ storage.On, _ int) ([]bson.Raw, bool, error) {
	select {
	case <-time.After(s.pause):
		raw, _ := bson.Marshal(bson.D{{Key: "x", Value: 1}})
		return []bson.Raw{raw}, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// A cursor's getMores share the maxTimeMS of the command that opened it:
// the processing time adds up until it expires.
func TestCursorKeepsItsTimeLimit(t *testing.T) {
	h := quietHandlers(t)
	req := &Request{DB: "d", Cmd: bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: int32(400)}}}
	ctx, cancel, err := withMaxTime(context.Background(), req.Cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	reply, err := h.firstBatch(ctx, req.on, req, "d.c", &slowSource{pause: 60 * time.Millisecond}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := lookup(reply, "cursor")
	idv, _ := lookup(cur.(bson.D), "id")
	id := idv.(int64)
	codes := []int32{}
	for i := 0; i < 12; i++ {
		r := h.Dispatch(context.Background(), &Request{DB: "d", Cmd: bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: int32(1)}}})
		codes = append(codes, replyCode(r))
		if replyCode(r) != 0 {
			break
		}
		time.Sleep(100 * time.Millisecond) // idle time between getMores does not count
	}
	last := codes[len(codes)-1]
	if last != int32(mongoerr.MaxTimeMSExpired) || len(codes) < 2 {
		t.Fatalf("getMore codes %v: want a few successes, then MaxTimeMSExpired", codes)
	}
	r := h.Dispatch(context.Background(), &Request{DB: "d", Cmd: bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}})
	if replyCode(r) != int32(mongoerr.CursorNotFound) {
		t.Fatalf("the expired cursor is gone: %v", r)
	}
}

// currentOp reads the requests in process while they begin, change tier
// and end (run under -race).
func TestCurrentOpWhileRequestsComeAndGo(t *testing.T) {
	h := quietHandlers(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			s := &Session{ID: int64(g + 1), RemoteAddr: "127.0.0.1:1"}
			for {
				select {
				case <-stop:
					return
				default:
				}
				h.Dispatch(context.Background(), &Request{DB: "admin", Session: s,
					Cmd: bson.D{{Key: "sleep", Value: 1}, {Key: "millis", Value: int32(1)}, {Key: "comment", Value: "x"}}})
			}
		}(g)
	}
	for i := 0; i < 200; i++ {
		r := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "currentOp", Value: 1}, {Key: "command.comment", Value: "x"}}})
		if ok, _ := lookup(r, "ok"); ok != 1.0 {
			t.Fatalf("currentOp: %v", r)
		}
	}
	close(stop)
	for g := 0; g < 4; g++ {
		<-done
	}
}

// An operation's namespace is the collection the command works on, as
// MongoDB shows it.
func TestOpNamespace(t *testing.T) {
	h := quietHandlers(t)
	for _, c := range []struct {
		cmd  bson.D
		want string
	}{
		{bson.D{{Key: "find", Value: "c"}}, "d.c"},
		{bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "g"}}, "d.g"},
		{bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "e"}}}}, "d.e"},
		{bson.D{{Key: "ping", Value: 1}}, "d.$cmd"},
		{bson.D{{Key: "aggregate", Value: int32(1)}}, "d.$cmd"},
	} {
		req := &Request{DB: "d", Cmd: c.cmd}
		_, op := h.live.begin(context.Background(), req, h.tableEntry(req))
		h.live.end(op)
		if op.ns != c.want {
			t.Errorf("%v: ns %q, want %q", c.cmd, op.ns, c.want)
		}
	}
}
