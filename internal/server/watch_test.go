package server

import (
	"context"
	"net"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestDisconnectWatchCancelsWhenClientCloses(t *testing.T) {
	srv, cl := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := newDisconnectWatch(srv, cancel)
	w.arm()
	cl.Close()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a closed client did not cancel the request")
	}
	w.disarm()
}

func TestDisconnectWatchLeavesDataAndConnectionAlone(t *testing.T) {
	srv, cl := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := newDisconnectWatch(srv, cancel)
	// A request that was not watched (pipelined), one that ends before the
	// watch starts, and one that outlives watchDelay with a pipelined
	// message arriving meanwhile.
	w.disarm()
	w.arm()
	w.disarm()
	w.arm()
	time.Sleep(2 * watchDelay)
	if _, err := cl.Write([]byte("next")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(watchDelay)
	w.disarm()
	if ctx.Err() != nil {
		t.Fatal("a client that is still there canceled the request")
	}
	// The peeked bytes are still there for the handler, with no deadline left.
	buf := make([]byte, 4)
	if _, err := srv.Read(buf); err != nil || string(buf) != "next" {
		t.Fatalf("read %q, %v", buf, err)
	}
}
