package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection with its reusable buffers.
type conn struct {
	nc      net.Conn
	br      *bufio.Reader // raw connection
	cr      chunkedReader
	lr      *bufio.Reader // de-chunked body, line by line
	scratch []byte
	wbuf    []byte
	fresh   bool // dialed and not used yet, or reused: a failure before any response byte may be retried
}

const bufSize = 4096

func dial(addr string, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, bufSize), fresh: true}
	c.lr = bufio.NewReaderSize(&c.cr, bufSize)
	return c, nil
}

func (c *conn) close() {
	if c != nil && c.nc != nil {
		_ = c.nc.Close()
	}
}

// outcome is what one request produced.
type outcome struct {
	ttft, e2e    time.Duration
	tokens       int // usage.completion_tokens, or counted chunks when absent
	chunks       int
	promptTokens int
	keepAlive    bool
	sentAny      bool // a response byte arrived (no retry after that)
}

// header lookups (lower-case comparisons without allocation).
var (
	hdrTE   = []byte("transfer-encoding:")
	hdrCL   = []byte("content-length:")
	hdrConn = []byte("connection:")
)

// do sends one request (c.wbuf holds it) and consumes the response. start
// is the request's nominal start (its scheduled arrival in open loop). itl
// receives the gaps between consecutive token chunks.
func (c *conn) do(start time.Time, deadline time.Time, stream bool, itl *[]time.Duration) (outcome, error) {
	var o outcome
	_ = c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return o, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return o, unexpected(err)
	}
	o.sentAny = true
	status, ok := parseStatus(line)
	if !ok {
		return o, fmt.Errorf("bad status line %q", trimEOL(line))
	}
	chunked, length, keep := false, int64(-1), true
	for {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			return o, unexpected(err)
		}
		h := trimEOL(line)
		if len(h) == 0 {
			break
		}
		switch {
		case hasPrefixFold(h, hdrTE):
			chunked = bytes.Contains(bytes.ToLower(h[len(hdrTE):]), []byte("chunked"))
		case hasPrefixFold(h, hdrCL):
			length, _ = strconv.ParseInt(string(bytes.TrimSpace(h[len(hdrCL):])), 10, 64)
		case hasPrefixFold(h, hdrConn):
			if bytes.Contains(bytes.ToLower(h[len(hdrConn):]), []byte("close")) {
				keep = false
			}
		}
	}
	var body io.Reader
	switch {
	case chunked:
		c.cr.reset(c.br)
		c.lr.Reset(&c.cr)
		body = c.lr
	case length >= 0:
		body = io.LimitReader(c.br, length)
	default:
		keep = false
		body = c.br
	}
	o.keepAlive = keep
	if status != 200 {
		msg, _ := io.ReadAll(io.LimitReader(body, 64<<10))
		_, _ = io.Copy(io.Discard, body)
		return o, fmt.Errorf("HTTP %d: %s", status, errMessage(msg))
	}
	if !stream || !chunked {
		b, err := io.ReadAll(body)
		if err != nil {
			return o, unexpected(err)
		}
		o.e2e = time.Since(start)
		o.ttft = o.e2e
		o.promptTokens, o.tokens = ParseUsage(b)
		if o.tokens < 0 {
			return o, errors.New("response without usage.completion_tokens")
		}
		o.chunks = o.tokens
		return o, nil
	}
	var last time.Time
	usage := -1
	for {
		line, err := readLine(c.lr, &c.scratch)
		if err != nil {
			if err == io.EOF {
				return o, errors.New("stream ended without [DONE]")
			}
			return o, unexpected(err)
		}
		kind, p := Classify(line)
		switch kind {
		case EvToken:
			now := time.Now()
			if o.chunks == 0 {
				o.ttft = now.Sub(start)
			} else {
				*itl = append(*itl, now.Sub(last))
			}
			last = now
			o.chunks++
		case EvUsage:
			o.promptTokens, usage = ParseUsage(p)
		case EvError:
			_, _ = io.Copy(io.Discard, c.lr)
			return o, fmt.Errorf("stream error: %s", errMessage(p))
		case EvDone:
			o.e2e = time.Since(start)
			if usage >= 0 {
				o.tokens = usage
			} else {
				o.tokens = o.chunks
			}
			// Consume the rest of the body (the terminating chunk).
			if _, err := io.Copy(io.Discard, c.lr); err != nil {
				o.keepAlive = false
			}
			return o, nil
		}
	}
}

func parseStatus(line []byte) (int, bool) {
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false
	}
	n, err := strconv.Atoi(string(line[9:12]))
	return n, err == nil
}

func hasPrefixFold(b, prefix []byte) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], prefix)
}

// errMessage picks the "message" of an OpenAI error body, or a prefix of it.
func errMessage(b []byte) string {
	const key = `"message":"`
	if i := bytes.Index(b, []byte(key)); i >= 0 {
		m := b[i+len(key):]
		if j := bytes.IndexByte(m, '"'); j >= 0 {
			m = m[:j]
		}
		if len(m) > 100 {
			m = m[:100]
		}
		return string(m)
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(bytes.TrimSpace(b))
}
