package conn

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
)

// JSONErrorListener wraps a listener so that the answers net/http's server
// writes by itself, before any handler runs (431 for oversized headers, 400
// for a malformed request line or header, 501 for an unknown transfer
// encoding), carry a JSON body in vLLM's error shape instead of text/plain,
// like every other answer of the server.
func JSONErrorListener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

// jsonErrorConn rewrites net/http's plain-text error responses. They are
// written in one Write straight to the connection, in a fixed form.
type jsonErrorConn struct{ net.Conn }

// NetConn returns the wrapped connection (for a TCP reset).
func (c *jsonErrorConn) NetConn() net.Conn { return c.Conn }

// SetLinger forwards to a TCP connection (linger 0 closes with a reset).
func (c *jsonErrorConn) SetLinger(sec int) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.SetLinger(sec)
	}
	return nil
}

// CloseWrite keeps net/http's half-close after a 431.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

const (
	stdlibErrorPrefix  = "HTTP/1.1 "
	stdlibErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
)

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if len(p) < len(stdlibErrorPrefix)+3 || (p[9] != '4' && p[9] != '5') ||
		!bytes.HasPrefix(p, []byte(stdlibErrorPrefix)) {
		return c.Conn.Write(p)
	}
	statusLine, detail, ok := bytes.Cut(p[len(stdlibErrorPrefix):], []byte(stdlibErrorHeaders))
	if !ok {
		return c.Conn.Write(p)
	}
	code, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil {
		return c.Conn.Write(p)
	}
	reason := string(bytes.TrimSpace(statusLine[3:]))
	if i := bytes.IndexByte(statusLine, ':'); i > 3 {
		reason = string(bytes.TrimSpace(statusLine[3:i]))
	}
	msg := string(bytes.TrimSpace(detail))
	if len(msg) > 4 && msg[3] == ' ' {
		msg = msg[4:] // "431 Request Header Fields Too Large" → the reason text
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": reason, "param": nil, "code": code}})
	out := make([]byte, 0, 160+len(body))
	out = append(out, stdlibErrorPrefix...)
	out = append(out, statusLine[:3]...)
	out = append(out, ' ')
	out = append(out, reason...)
	out = append(out, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\nConnection: close\r\n\r\n"...)
	out = append(out, body...)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
