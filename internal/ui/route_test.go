package ui

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRouteRefusesASlowBodyAtOnce sends /ui a request that declares a body
// and trickles a byte of it: the answer (400) comes at once and the
// connection is closed, instead of the server waiting for the body.
func TestRouteRefusesASlowBodyAtOnce(t *testing.T) {
	view := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewServer(Route(http.NotFoundHandler(), view))
	defer srv.Close()
	for _, path := range []string{"/ui", "/ui/api/request"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\nx"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_, err = br.ReadByte()
		var ne net.Error
		closed := err != nil && !(errors.As(err, &ne) && ne.Timeout())
		if resp.StatusCode != http.StatusBadRequest || !closed || time.Since(start) > time.Second {
			t.Errorf("%s: %d, closed %v (%v), after %v; want 400 and closed at once", path, resp.StatusCode, closed, err, time.Since(start))
		}
		conn.Close()
	}
	// A plain GET still reaches the view.
	resp, err := http.Get(srv.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ui: %d", resp.StatusCode)
	}
}
