// Package conn is what the HTTP layer does at the connection level: the
// ConnContext hook that lets a stream write its chunks straight to the socket
// (non-blocking, through internal/sockwrite) and the listener that answers a
// malformed request with a JSON body instead of net/http's text.
package conn

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/sockwrite"
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

// OpenRawLine opens l for the request's connection. False means the
// response cannot be written raw: no ConnContext, not TCP, or not a
// chunked HTTP/1.1 response (net/http frames only those as chunks, and the
// raw writes carry the chunk framing themselves).
func OpenRawLine(l *sockwrite.Conn, r *http.Request) bool {
	if !r.ProtoAtLeast(1, 1) || r.Method == http.MethodHead {
		return false
	}
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return l.Open(c)
}

// ErrWouldBlock reports that the client's socket buffer is full: the
// stream's delivery goroutine hands the unwritten bytes to the stream's
// own handler goroutine, which waits for the client.
var ErrWouldBlock = errors.New("client socket buffer full")

// AppendChunk appends data framed as one HTTP/1.1 chunk, as net/http's
// chunked writer frames each flush: hex size, CRLF, data, CRLF.
func AppendChunk(dst, data []byte) []byte {
	dst = strconv.AppendUint(dst, uint64(len(data)), 16)
	dst = append(dst, '\r', '\n')
	dst = append(dst, data...)
	return append(dst, '\r', '\n')
}
