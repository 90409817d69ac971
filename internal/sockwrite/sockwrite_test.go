package sockwrite

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// pair returns a connected loopback pair: the accepted server side and
// the client side. Both close when the test ends.
func pair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln := testutil.Listen(t)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// wrapped is a net.Conn wrapper that exposes the connection it wraps, as
// the server's listener wrapper does.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

func TestOpen_FindsTheTCPConnectionBehindWrappers(t *testing.T) {
	server, _ := pair(t)
	var c Conn
	if !c.Open(wrapped{wrapped{server}}) || c.TCP() != server {
		t.Fatal("Open did not find the TCP connection behind two wrappers")
	}
	var none Conn
	if none.Open(nil) || none.Open(wrapped{}) {
		t.Fatal("Open succeeded without a TCP connection")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if none.Open(p1) {
		t.Fatal("Open succeeded on a pipe")
	}
}

// Every byte written arrives, in order, read by the kernel's own socket on
// the other side.
func TestTryWrite_DeliversWhatItReports(t *testing.T) {
	server, client := pair(t)
	var c Conn
	if !c.Open(server) {
		t.Fatal("Open failed")
	}
	var want bytes.Buffer
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	for i := range 200 {
		msg := bytes.Repeat([]byte{byte('a' + i%26)}, 100+i)
		n, err := c.TryWrite(msg)
		if err != nil || n != len(msg) {
			t.Fatalf("write %d: %d of %d bytes, %v", i, n, len(msg), err)
		}
		want.Write(msg)
	}
	server.Close()
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("read %d bytes, want %d identical ones", len(b), want.Len())
	}
}

// A peer that does not read fills the socket: TryWrite then returns at
// once with fewer bytes than asked and no error, never waiting; a reset
// peer is an error.
func TestTryWrite_FullSocketReturnsAtOnceAndResetFails(t *testing.T) {
	server, client := pair(t)
	_ = server.(*net.TCPConn).SetWriteBuffer(4096)
	_ = client.(*net.TCPConn).SetReadBuffer(4096)
	var c Conn
	if !c.Open(server) {
		t.Fatal("Open failed")
	}
	msg := make([]byte, 64<<10)
	full := false
	start := time.Now()
	for range 1000 {
		n, err := c.TryWrite(msg)
		if err != nil {
			t.Fatalf("write to a live peer: %v", err)
		}
		if n < len(msg) {
			full = true
			break
		}
	}
	if !full {
		t.Fatal("64 MB went into a socket whose peer never reads")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("filling the socket took %v: a write waited", d)
	}
	_ = client.(*net.TCPConn).SetLinger(0)
	client.Close() // the peer resets
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.TryWrite(msg[:1])
		if err != nil {
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Errorf("write to a reset peer: %v, want ECONNRESET or EPIPE", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a reset peer kept succeeding")
		}
		time.Sleep(time.Millisecond)
	}
}
