package api

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A 408 for a body that did not arrive closes the connection at once,
// whatever the declared length: for a body of at most 256 KiB net/http
// would otherwise wait to discard the rest after the handler, holding the
// connection and its file descriptor (issue 34 H11).
func TestHardening_408ClosesTheConnectionForSmallBodies(t *testing.T) {
	env := startServer(t, map[string]any{"request_body_timeout": 0.3})
	addr := strings.TrimPrefix(env.URL, "http://")
	for _, declared := range []int{100, 200 << 10, 256 << 10} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			"Content-Length: " + strconv.Itoa(declared) + "\r\n\r\n{"))
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("declared %d: %v", declared, err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("declared %d: status %d", declared, resp.StatusCode)
		}
		// The server closes: the next read ends (EOF or reset), well
		// before the client's own deadline.
		_, err = br.ReadByte()
		took := time.Since(start)
		c.Close()
		if err == nil || isTimeout(err) || took > 2*time.Second {
			t.Errorf("declared %d: connection still open %v after the 408 (read: %v)", declared, took, err)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
