package testutil

import (
	"fmt"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// ZMQSocket is a test-side ZMQ socket — a KV-event or FPM subscriber, a
// replay client — with its poller, used from one goroutine. Sock is the
// socket itself, for sending and options.
type ZMQSocket struct {
	t      testing.TB
	Sock   *zmq.Socket
	poller *zmq.Poller
}

// OpenZMQSocket creates a socket of type typ in zctx (nil: in a context of
// its own, terminated when the test ends), sets linger 0, calls setup
// (nil: none) and binds it to ep or connects it. It returns the bind or
// connect error, for a caller that retries with another port; any other
// failure fails the test. The socket is closed when the test ends.
func OpenZMQSocket(t testing.TB, zctx *zmq.Context, typ zmq.Type, ep string, bind bool, setup func(*zmq.Socket) error) (*ZMQSocket, error) {
	t.Helper()
	if zctx == nil {
		own, err := zmq.NewContext()
		if err != nil {
			t.Fatalf("zmq context: %v", err)
		}
		// Cleanups run last-registered first: the socket closes before
		// its context terminates (Term waits for its sockets).
		t.Cleanup(func() { _ = own.Term() })
		zctx = own
	}
	s, err := zctx.NewSocket(typ)
	if err != nil {
		t.Fatalf("zmq socket %v: %v", typ, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.SetLinger(0); err != nil {
		t.Fatalf("zmq linger: %v", err)
	}
	if setup != nil {
		if err := setup(s); err != nil {
			t.Fatalf("zmq socket %v setup: %v", typ, err)
		}
	}
	if bind {
		err = s.Bind(ep)
	} else {
		err = s.Connect(ep)
	}
	if err != nil {
		return nil, fmt.Errorf("zmq %v %s: %w", typ, ep, err)
	}
	p := zmq.NewPoller()
	p.Add(s, zmq.POLLIN)
	return &ZMQSocket{t: t, Sock: s, poller: p}, nil
}

// NewZMQSocket is OpenZMQSocket that fails the test when the socket cannot
// bind or connect.
func NewZMQSocket(t testing.TB, zctx *zmq.Context, typ zmq.Type, ep string, bind bool, setup func(*zmq.Socket) error) *ZMQSocket {
	t.Helper()
	s, err := OpenZMQSocket(t, zctx, typ, ep, bind, setup)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// NewZMQSub returns a SUB socket on ep subscribed to topic ("" for every
// message): a KV-event or FPM subscriber. A SUB receives only what is
// published after its subscription reached the publisher; Settle waits for
// that.
func NewZMQSub(t testing.TB, zctx *zmq.Context, ep string, bind bool, topic string) *ZMQSocket {
	t.Helper()
	return NewZMQSocket(t, zctx, zmq.SUB, ep, bind, func(s *zmq.Socket) error { return s.SetSubscribe(topic) })
}

// Recv waits up to timeout for one multipart message and returns its
// frames, or nil when none came (a message has at least one frame).
func (s *ZMQSocket) Recv(timeout time.Duration) [][]byte {
	s.t.Helper()
	polled, err := s.poller.Poll(timeout)
	if err != nil {
		s.t.Fatalf("zmq poll: %v", err)
	}
	if len(polled) == 0 {
		return nil
	}
	msg, err := s.Sock.RecvMessageBytes(0)
	if err != nil {
		s.t.Fatalf("zmq recv: %v", err)
	}
	return msg
}

// MustRecv is Recv that fails the test when nothing comes within timeout.
func (s *ZMQSocket) MustRecv(timeout time.Duration, what string) [][]byte {
	s.t.Helper()
	msg := s.Recv(timeout)
	if msg == nil {
		s.t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	return msg
}

// Settle services the socket for d, failing the test if a message arrives
// meanwhile: a bound SUB forwards its subscription only while it is
// serviced, and a connecting one needs the time to reach the publisher
// (the slow joiner).
func (s *ZMQSocket) Settle(d time.Duration) {
	s.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if msg := s.Recv(20 * time.Millisecond); msg != nil {
			s.t.Fatalf("unexpected message while settling: %q", msg)
		}
	}
}
