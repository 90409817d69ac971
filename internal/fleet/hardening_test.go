package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
)

func TestKeylessAdminOffLoopbackIsRefused(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:9000", ":9000", "[::]:9000", "10.1.2.3:9000", "mocker.example:9000"} {
		f, err := Start(context.Background(), members, Options{AdminAddr: addr})
		var cfgErr *config.Error
		if f != nil || !errors.As(err, &cfgErr) || len(cfgErr.Problems) != 1 || !strings.Contains(err.Error(), "--admin-key") {
			if f != nil {
				f.Stop()
			}
			t.Errorf("admin on %s without a key: fleet %v, error %v; want one configuration error naming --admin-key", addr, f != nil, err)
		}
	}
	for _, tc := range []struct {
		addr, key string
		allow     bool
	}{
		{"127.0.0.1:9000", "", false}, {"127.9.9.9:9000", "", false}, {"[::1]:9000", "", false},
		{"localhost:9000", "", false}, {"0.0.0.0:9000", "k", false}, {"0.0.0.0:9000", "", true},
	} {
		if err := checkAdminExposure(tc.addr, tc.key, tc.allow); err != nil {
			t.Errorf("admin on %s key %q insecure %v refused: %v", tc.addr, tc.key, tc.allow, err)
		}
	}
}

// rawRequest opens a connection to the admin API and writes head (a
// request line and headers, without the blank line) followed by the blank
// line and body.
func rawRequest(t *testing.T, base, head, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+"\r\nHost: admin\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readAnswer reads one response within timeout and reports its status, and
// whether the server then closed the connection.
func readAnswer(t *testing.T, conn net.Conn, timeout time.Duration) (status int, closed bool) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", timeout, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, connClosed(err)
}

// connClosed reports whether a read error means the peer closed the
// connection (EOF, or a reset when the client had sent data the server
// never read), not that the read timed out.
func connClosed(err error) bool {
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestAdmin401DoesNotWaitForTheBody declares a body and sends a little of
// it without a key: the 401 comes at once and the connection is closed
// (before, net/http first read the rest of a body of up to 256 KiB).
func TestAdmin401DoesNotWaitForTheBody(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	_, admin := startWithAdmin(t, members, "k")
	start := time.Now()
	conn := rawRequest(t, admin, "POST /workers/0/kill HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100000", `{"a":`)
	status, closed := readAnswer(t, conn, 2*time.Second)
	if status != http.StatusUnauthorized || !closed {
		t.Errorf("status %d, connection closed %v; want 401 and closed", status, closed)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the 401 took %v", took)
	}
}

// TestAdminSlowlorisBodiesAreCut holds 20 connections that declare a body
// and send it a byte at a time too slowly: each gets 408 and a closed
// connection at the body deadline, while an honest request meanwhile is
// answered at once.
func TestAdminSlowlorisBodiesAreCut(t *testing.T) {
	adminBodyTimeoutForTest = 300 * time.Millisecond
	t.Cleanup(func() { adminBodyTimeoutForTest = 0 })
	members, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	_, admin := startWithAdmin(t, members, "k")
	const clients = 20
	var wg sync.WaitGroup
	results := make(chan string, clients)
	start := time.Now()
	for range clients {
		conn := rawRequest(t, admin, "POST /workers/0/slow HTTP/1.1\r\nAuthorization: Bearer k\r\nContent-Length: 64", "{")
		wg.Go(func() {
			// A byte every 100 ms: the 64-byte body would take 6 s.
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			close(stop)
			if err != nil {
				results <- "no answer: " + err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			_, err = br.ReadByte()
			if resp.StatusCode != http.StatusRequestTimeout || !connClosed(err) {
				results <- fmt.Sprintf("status %s, after it: %v", resp.Status, err)
				return
			}
			results <- ""
		})
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if code, _ := adminCall(t, client, http.MethodGet, admin+"/workers/0", "k", ""); code != http.StatusOK {
		t.Errorf("an honest request during the slowloris: %d", code)
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r != "" {
			t.Error(r)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the slow clients were cut after %v, the body deadline is 300 ms", took)
	}
}

func TestActionRouteWrongMethodIs405(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	_, admin := startWithAdmin(t, members, "k")
	client := &http.Client{Timeout: 2 * time.Second}
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/workers/0/kill", 405, "POST"},
		{http.MethodPut, "/workers/0/reset_prefix_cache", 405, "POST"},
		{http.MethodDelete, "/workers/0/faults", 405, "GET, PUT, POST"},
		{http.MethodPut, "/workers/0/engine", 405, "GET"},
		{http.MethodGet, "/workers/0/nonsense", 404, ""},
		{http.MethodGet, "/workers/7/kill", 404, ""},
	} {
		resp := send(t, client, tc.method, admin+tc.path, "k", "")
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q; want %d Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.code, tc.allow)
		}
	}
}

// TestSlowActionRangeMessages: an extra delay beyond a year is refused with
// its range, not with the negative duration 1e300 ms wrapped to; a tiny
// speedup ratio is accepted (the engine freezes the worker, see
// engine.MaxPassDuration).
func TestSlowActionRangeMessages(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	_, admin := startWithAdmin(t, members, "k")
	client := &http.Client{Timeout: 5 * time.Second}
	for _, body := range []string{`{"extra_pass_delay_ms": 1e300}`, `{"extra_pass_delay_ms": -1}`} {
		code, v := adminCall(t, client, http.MethodPost, admin+"/workers/0/slow", "k", body)
		if msg := fmt.Sprint(v); code != 400 || !strings.Contains(msg, "between 0 and 31536000000") || strings.Contains(msg, "-2562047h") {
			t.Errorf("slow %s: %d %s", body, code, msg)
		}
	}
	if code, v := adminCall(t, client, http.MethodPost, admin+"/workers/0/slow", "k", `{"speedup_ratio": 1e-20}`); code != 200 {
		t.Errorf("slow to 1e-20: %d %v", code, v)
	}
}
