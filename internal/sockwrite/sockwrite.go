// Package sockwrite writes to a TCP connection's socket without waiting:
// one write(2) on the non-blocking descriptor, and the caller learns how
// much the kernel took. One goroutine can then serve thousands of
// connections without being held by one whose socket is full. The server's
// stream delivery (internal/api) and the write-floor benchmark
// (internal/loadgen) both write this way, so the floor measures the
// server's own path.
package sockwrite

import (
	"errors"
	"net"
	"syscall"
)

// Conn is one TCP connection opened for non-blocking writes. It must not
// be copied or moved once open (it holds a method value bound to itself).
type Conn struct {
	tcp *net.TCPConn
	sc  syscall.RawConn

	// The write in progress, shared with tryWrite (a method value made
	// once, so a write allocates nothing).
	p       []byte
	n       int
	err     error
	writeFn func(fd uintptr)
}

// Open opens c for c's TCP connection, looking through wrappers that
// expose it with a NetConn method. False means there is none.
func (c *Conn) Open(nc net.Conn) bool {
	for nc != nil {
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	sc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	c.tcp, c.sc = tc, sc
	c.writeFn = c.tryWrite
	return true
}

// TCP returns the connection, for a write that may wait.
func (c *Conn) TCP() *net.TCPConn { return c.tcp }

// TryWrite writes as much of p as the socket takes now and returns how
// many bytes that was; an error means the connection failed. Fewer than
// len(p) bytes without an error means the socket buffer is full.
//
// It runs under RawConn.Control rather than RawConn.Write: both hold the
// descriptor open for the call (it cannot be closed and reused
// underneath), but Control skips the poller's write preparation (deadline
// and readiness bookkeeping), which a write that never waits does not
// need. Writes through TryWrite and the connection's own Write must not
// overlap.
func (c *Conn) TryWrite(p []byte) (int, error) {
	c.p, c.n, c.err = p, 0, nil
	if err := c.sc.Control(c.writeFn); err != nil {
		return 0, err
	}
	n, err := c.n, c.err
	c.p = nil
	return n, err
}

// tryWrite writes until done or the socket would block.
func (c *Conn) tryWrite(fd uintptr) {
	for c.n < len(c.p) {
		n, err := syscall.Write(int(fd), c.p[c.n:])
		if n > 0 {
			c.n += n
		}
		switch {
		case err == nil && n > 0:
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return
		case err != nil:
			c.err = err
			return
		default: // 0 bytes and no error: treat as a closed connection
			c.err = syscall.EPIPE
			return
		}
	}
}
