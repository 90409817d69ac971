package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// connKey is the request-context key of the request's connection.
type connKey struct{}

// ConnContext is the http.Server ConnContext hook that lets streams write
// their events straight to the connection (see delivery.go). A server
// without it streams every response through net/http's writer from its
// handler goroutine, which is correct but costs a goroutine wake-up and
// net/http's buffering per stream per pass.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// rawLine writes a stream's bytes to its TCP connection with write(2) on
// the non-blocking socket, never waiting: the caller learns how much the
// kernel took, so a delivery goroutine serving thousands of streams is
// never held by one slow reader.
type rawLine struct {
	conn net.Conn        // the TCP connection (for blocking writes)
	sc   syscall.RawConn // its descriptor

	// The write in progress, shared with tryWrite (a method value made
	// once, so a write allocates nothing).
	p       []byte
	n       int
	err     error
	writeFn func(fd uintptr)
}

// open makes l the raw line of a request's connection. False means the
// response cannot be written raw: no ConnContext, not TCP, or not a
// chunked HTTP/1.1 response (net/http frames only those as chunks, and the
// raw writes carry the chunk framing themselves). l must not move once
// open (the streamer holds it by value, so the write path follows one
// pointer less).
func (l *rawLine) open(r *http.Request) bool {
	if !r.ProtoAtLeast(1, 1) || r.Method == http.MethodHead {
		return false
	}
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	for c != nil {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	sc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	l.conn, l.sc = tc, sc
	l.writeFn = l.tryWrite
	return true
}

// errWouldBlock reports that the client's socket buffer is full: the
// stream's delivery goroutine hands the unwritten bytes to the stream's
// own handler goroutine, which waits for the client.
var errWouldBlock = errors.New("client socket buffer full")

// write writes as much of p as the socket takes now. It returns how many
// bytes were written and an error when the connection failed.
//
// It runs the write under RawConn.Control rather than RawConn.Write: both
// hold the descriptor open for the call (it cannot be closed and reused
// underneath), but Control skips the poller's write preparation (deadline
// and readiness bookkeeping), which a write that never waits does not need
// and which cost about a tenth of a streamed token at 10,000 streams. The
// stream's handler goroutine, the only other writer of the connection, is
// parked while its shard writes.
func (l *rawLine) write(p []byte) (int, error) {
	l.p, l.n, l.err = p, 0, nil
	if err := l.sc.Control(l.writeFn); err != nil {
		return 0, err
	}
	n, err := l.n, l.err
	l.p = nil
	return n, err
}

// tryWrite writes until done or the socket would block.
func (l *rawLine) tryWrite(fd uintptr) {
	for l.n < len(l.p) {
		n, err := syscall.Write(int(fd), l.p[l.n:])
		if n > 0 {
			l.n += n
		}
		switch {
		case err == nil && n > 0:
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return
		case err != nil:
			l.err = err
			return
		default: // 0 bytes and no error: treat as a closed connection
			l.err = syscall.EPIPE
			return
		}
	}
}

// appendChunk appends data framed as one HTTP/1.1 chunk, as net/http's
// chunked writer frames each flush: hex size, CRLF, data, CRLF.
func appendChunk(dst, data []byte) []byte {
	dst = strconv.AppendUint(dst, uint64(len(data)), 16)
	dst = append(dst, '\r', '\n')
	dst = append(dst, data...)
	return append(dst, '\r', '\n')
}
