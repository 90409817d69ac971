package worker

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// The side channel on a disaggregated worker's API port (/kv_transfer/*)
// needs --api-key, and the 401 is answered from the headers: a client
// without the key that declares a body and never sends it gets its 401 at
// once, not after the body deadline (issue 34 H6).
func TestSideChannelNeedsTheAPIKeyBeforeTheBody(t *testing.T) {
	cfg := testcfg.Load(t, map[string]any{"port": 0, "log_level": "warn", "worker_type": "prefill",
		"api_key": []any{"sk-w"}, "request_body_timeout": 5.0})
	w := New(cfg, Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	addr := strings.TrimPrefix(w.URL(), "http://")
	for _, path := range []string{"/kv_transfer/release", "/kv_transfer/pull"} {
		for _, auth := range []string{"", "Authorization: Bearer wrong\r\n"} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, _ = c.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth +
				"Content-Length: 100\r\n\r\n{"))
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			if err != nil {
				t.Fatalf("%s %q: no answer before the body: %v", path, auth, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || time.Since(start) > time.Second {
				t.Errorf("%s %q: %d after %v, want 401 at once", path, auth, resp.StatusCode, time.Since(start))
			}
		}
	}
	// With the key the side channel answers (an unknown room: 404).
	req, _ := http.NewRequest(http.MethodPost, w.URL()+"/kv_transfer/release",
		strings.NewReader(`{"remote_request_id":"nope","remote_engine_id":"x"}`))
	req.Header.Set("Authorization", "Bearer sk-w")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 500 {
		t.Errorf("release with the key: %d", resp.StatusCode)
	}
}
