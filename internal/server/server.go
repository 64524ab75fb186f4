package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/commands"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/wire"
)

// Options configure a Server.
type Options struct {
	// Listen is the TCP address, e.g. 127.0.0.1:27017.
	Listen   string
	Handlers *commands.Handlers
	Logger   *slog.Logger
	// TLS, when set, makes every connection TLS (drivers use tls=true).
	TLS *tls.Config
	// FrameTimeout bounds the time from a message's first byte to its last
	// (0: none): a client that starts a message and stalls is cut off.
	FrameTimeout time.Duration
	// IdleTimeout closes a connection that has sent nothing and has no
	// request running for this long (0: never).
	IdleTimeout time.Duration
	// MaxIncomingBytes bounds what all connections together hold in
	// messages still arriving, beyond the first MiB of each (0: no bound).
	MaxIncomingBytes int64
}

// Server is the MongoDB-protocol endpoint.
type Server struct {
	opts Options
	log  *slog.Logger
	ln   net.Listener

	nextID atomic.Int64 // connection IDs, one per accepted connection
	total  atomic.Int64
	// replyID numbers replies (their requestID): a counter of its own, so
	// that connection IDs stay consecutive in logs and currentOp.
	replyID atomic.Int32

	mu    sync.Mutex
	conns map[int64]*conn
	wg    sync.WaitGroup
	done  chan struct{}
	// incoming is the budget of unfinished messages (Options.MaxIncomingBytes).
	incoming *wire.Budget
}

// Listen opens the listening socket.
func Listen(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	return &Server{opts: opts, log: opts.Logger, ln: ln, conns: map[int64]*conn{}, done: make(chan struct{}),
		incoming: wire.NewBudget(opts.MaxIncomingBytes)}, nil
}

// SetHandlers sets the command table (it needs the server for connection counts).
func (s *Server) SetHandlers(h *commands.Handlers) { s.opts.Handlers = h }

// Addr is the address actually listened on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Connections returns the number of open connections and of all accepted so far.
func (s *Server) Connections() (current, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.conns)), s.total.Load()
}

// Serve accepts connections until Shutdown.
func (s *Server) Serve() error {
	var delay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			// Out of file descriptors and the like: back off, keep serving.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		tcp := nc
		if tc, ok := nc.(*tls.Conn); ok {
			tcp = tc.NetConn()
		}
		if tc, ok := tcp.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			_ = tc.SetKeepAlive(true)
		}
		c := &conn{srv: s, nc: nc, sess: &commands.Session{ID: s.nextID.Add(1), RemoteAddr: nc.RemoteAddr().String(), Tier: qos.Normal,
			Loopback: isLoopbackAddr(nc.RemoteAddr())}}
		s.mu.Lock()
		s.conns[c.sess.ID] = c
		s.mu.Unlock()
		s.total.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.run()
			s.mu.Lock()
			delete(s.conns, c.sess.ID)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, closes every connection and waits for their
// goroutines, or until ctx ends.
func (s *Server) Shutdown(ctx context.Context) {
	close(s.done)
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
}

// Clients lists the open connections, for currentOp's idle connections.
func (s *Server) Clients() []commands.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]commands.Client, 0, len(s.conns))
	for id, c := range s.conns {
		out = append(out, commands.Client{ID: id, RemoteAddr: c.sess.RemoteAddr})
	}
	return out
}

// opInfo describes the request a connection is running.
type opInfo struct {
	id    int64
	name  string
	ns    string
	start time.Time
}

type conn struct {
	srv  *Server
	nc   net.Conn
	sess *commands.Session
	op   atomic.Pointer[opInfo]
	opID int64
	// body and out are reply buffers reused by write.
	body, out []byte
}

type readResult struct {
	msg *wire.Message
	err error
}

// run serves one connection until it closes or fails.
func (c *conn) run() {
	defer c.nc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := c.srv.log.With("conn", c.sess.ID, "remote", c.sess.RemoteAddr)

	// The reader runs ahead of the handler so that a disconnect is noticed
	// (and the running request canceled) while a request is being processed.
	msgs := make(chan readResult)
	go func() {
		if tc, ok := c.nc.(*tls.Conn); ok {
			// Finish the TLS handshake before the first message, within a
			// bound, so a client that never completes it does not hold a
			// connection forever; its failure is worth a log line.
			_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
			if err := tc.HandshakeContext(ctx); err != nil {
				log.Warn("TLS handshake failed", "err", err)
				cancel()
				return
			}
			_ = tc.SetDeadline(time.Time{})
		}
		br := bufio.NewReaderSize(c.nc, 64*1024)
		for {
			err := c.awaitMessage(br)
			var m *wire.Message
			if err == nil {
				m, err = wire.ReadMessageWithin(br, wire.MaxMessageSize, c.srv.incoming)
			}
			if err != nil && isFatal(err) {
				// The stream is over or unusable: cancel the request in
				// flight (a vanished client's request must not hold a
				// queue slot or a backend), and let the handler log why.
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					log.Warn("closing connection", "err", err)
				}
				cancel()
				return
			}
			select {
			case msgs <- readResult{m, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var r readResult
		select {
		case r = <-msgs:
		case <-ctx.Done():
			return
		}
		if r.err != nil {
			log.Warn("bad message from client", "err", r.err)
			// A well-framed message we cannot use: answer it with an error.
			var fe *wire.FrameError
			if errors.As(r.err, &fe) && fe.Header != nil && fe.Header.OpCode == wire.OpCodeMsg {
				reply := commands.ErrorReply(mongoerr.New(fe.Code, fe.Msg))
				if !c.write(log, fe.Header.RequestID, reply, false) {
					return
				}
				continue
			}
			return
		}
		if !c.handle(ctx, log, r.msg) {
			return
		}
	}
}

// awaitMessage waits for the first byte of the next message, for as long
// as the idle timeout allows while no request of the connection runs, and
// then gives the whole message FrameTimeout to arrive.
func (c *conn) awaitMessage(br *bufio.Reader) error {
	idle, frame := c.srv.opts.IdleTimeout, c.srv.opts.FrameTimeout
	for {
		deadline := time.Time{} // the last message's frame deadline must not linger
		if idle > 0 {
			deadline = time.Now().Add(idle)
		}
		_ = c.nc.SetReadDeadline(deadline)
		_, err := br.Peek(1)
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() && c.op.Load() != nil {
			continue // quiet because its request is still running: not idle
		}
		if err != nil {
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("idle for %v: %w", idle, err)
			}
			return err
		}
		break
	}
	if frame > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(frame))
	} else {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	return nil
}

// tlsHandshakeTimeout bounds a client's TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// isLoopbackAddr reports whether a peer address is on the loopback network.
func isLoopbackAddr(a net.Addr) bool {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.IsLoopback()
	}
	return false
}

// IsLoopbackListen reports whether a listen address ("host:port") accepts
// loopback clients only: 127.0.0.0/8, ::1 or localhost. An empty host,
// 0.0.0.0 or :: listen on every interface.
func IsLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isFatal(err error) bool {
	var fe *wire.FrameError
	if errors.As(err, &fe) {
		return fe.Fatal
	}
	return true // I/O errors
}

// handle runs one message; false means close the connection.
func (c *conn) handle(ctx context.Context, log *slog.Logger, m *wire.Message) bool {
	switch {
	case m.Msg != nil:
		cmd, err := m.Msg.Command()
		var reply bson.D
		if err != nil {
			reply = commands.ErrorReply(err) // the body's own code (InvalidBSON, 40433 …)
		} else {
			db, _ := dbField(cmd)
			reply = c.dispatch(ctx, db, cmd)
		}
		if m.Msg.Flags&wire.FlagMoreToCome != 0 {
			return true // the client asked for no reply
		}
		return c.write(log, m.Header.RequestID, reply, false)
	case m.Query != nil:
		return c.handleQuery(ctx, log, m)
	}
	return false
}

// handleQuery serves legacy OP_QUERY, which drivers use only for the first
// handshake (and old tools for commands): "<db>.$cmd" queries are commands.
func (c *conn) handleQuery(ctx context.Context, log *slog.Logger, m *wire.Message) bool {
	q := m.Query
	db, coll, _ := strings.Cut(q.FullCollectionName, ".")
	var cmd bson.D
	if coll != "$cmd" {
		return c.write(log, m.Header.RequestID, bson.D{{Key: "$err", Value: "OP_QUERY is only supported for commands; use OP_MSG"}, {Key: "code", Value: int32(5739101)}, {Key: "ok", Value: 0.0}}, true)
	}
	if err := bson.Unmarshal(q.Query, &cmd); err != nil {
		return c.write(log, m.Header.RequestID, bson.D{{Key: "$err", Value: "invalid BSON in query"}, {Key: "code", Value: int32(22)}, {Key: "ok", Value: 0.0}}, true)
	}
	if len(cmd) > 0 && (cmd[0].Key == "$query" || cmd[0].Key == "query") {
		if inner, ok := cmd[0].Value.(bson.D); ok {
			cmd = inner
		}
	}
	return c.write(log, m.Header.RequestID, c.dispatch(ctx, db, cmd), true)
}

func (c *conn) dispatch(ctx context.Context, db string, cmd bson.D) bson.D {
	name := ""
	if len(cmd) > 0 {
		name = cmd[0].Key
	}
	c.opID++
	c.op.Store(&opInfo{id: c.opID, name: name, ns: db, start: time.Now()})
	defer c.op.Store(nil)
	return c.srv.opts.Handlers.Dispatch(ctx, &commands.Request{DB: db, Cmd: cmd, Session: c.sess})
}

// write encodes reply and sends it as one message. The connection's two
// buffers are reused from reply to reply: only its handler goroutine writes.
func (c *conn) write(log *slog.Logger, responseTo int32, reply bson.D, legacy bool) bool {
	body, err := bsonx.AppendDocument(c.body[:0], reply)
	if err != nil || len(body) > wire.MaxBSONObjectSize+16*1024 {
		log.Error("cannot encode reply", "err", err, "size", len(body))
		body, _ = bsonx.AppendDocument(c.body[:0], commands.ErrorReply(mongoerr.New(mongoerr.BSONObjectTooLarge, "reply too large or not encodable")))
	}
	id := c.srv.replyID.Add(1)
	var msg []byte
	if legacy {
		msg, err = wire.AppendReply(c.out[:0], id, responseTo, 0, body)
	} else {
		msg, err = wire.AppendMsg(c.out[:0], id, responseTo, 0, body)
	}
	if err == nil {
		_, err = c.nc.Write(msg)
	}
	// Keep buffers of ordinary size for the next reply (a server holds
	// thousands of connections); let a large one go.
	if cap(body) <= 64<<10 {
		c.body = body
	}
	if cap(msg) <= 64<<10 {
		c.out = msg
	}
	if err != nil {
		log.Debug("write failed", "err", err)
		return false
	}
	return true
}

func dbField(cmd bson.D) (string, bool) {
	for _, e := range cmd {
		if e.Key == "$db" {
			s, ok := e.Value.(string)
			return s, ok
		}
	}
	return "", false
}
