package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// watchDelay is how long a request runs before its connection is watched
// for a disconnect. Most requests end well within it, so they cost no
// watcher goroutine, no extra wakeups and no socket system calls; a
// vanished client's request holds its queue slot or backend at most this
// much longer than if it were watched from the start.
const watchDelay = 10 * time.Millisecond

// disconnectWatch cancels the connection's context when the client goes
// away while a request runs. The handler goroutine reads the requests
// itself; only a request that outlives watchDelay gets a goroutine that
// waits for the socket to become readable and peeks at it without
// consuming anything: end of stream or an error means the client is gone,
// data (a pipelined request) ends the watch, as the client is still there.
type disconnectWatch struct {
	raw    syscall.RawConn
	tcp    net.Conn // the socket under any TLS, for its read deadline
	cancel context.CancelFunc
	timer  *time.Timer
	done   chan struct{} // one value per watch that started
	armed  bool          // only the handler goroutine uses it
}

// newDisconnectWatch returns a watch for nc, or nil when its socket cannot
// be peeked at (not a TCP connection).
func newDisconnectWatch(nc net.Conn, cancel context.CancelFunc) *disconnectWatch {
	tcp := nc
	if tc, ok := nc.(*tls.Conn); ok {
		tcp = tc.NetConn()
	}
	sc, ok := tcp.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &disconnectWatch{raw: raw, tcp: tcp, cancel: cancel, done: make(chan struct{}, 1)}
	w.timer = time.AfterFunc(time.Hour, w.watch)
	w.timer.Stop()
	return w
}

// arm starts the delay before the running request gets watched.
func (w *disconnectWatch) arm() {
	if w != nil {
		w.armed = true
		w.timer.Reset(watchDelay)
	}
}

// disarm ends the watch before the handler reads from the socket again. A
// request that ended within watchDelay only stops the timer.
func (w *disconnectWatch) disarm() {
	if w == nil || !w.armed {
		return
	}
	w.armed = false
	if w.timer.Stop() {
		return
	}
	// The watch started (or is about to): a read deadline in the past wakes
	// it, or makes it return at once; then the socket is the handler's again.
	_ = w.tcp.SetReadDeadline(time.Now())
	<-w.done
	_ = w.tcp.SetReadDeadline(time.Time{})
}

// watch waits until the socket is readable, or until disarm or a close
// interrupts it, and cancels the request if the client is gone.
func (w *disconnectWatch) watch() {
	defer func() { w.done <- struct{}{} }()
	gone := false
	err := w.raw.Read(func(fd uintptr) bool {
		var wait bool
		gone, wait = peekGone(fd)
		return !wait
	})
	// Any failure but our own deadline means the socket is unusable (closed
	// at shutdown): the request must not go on either.
	if gone || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
		w.cancel()
	}
}
