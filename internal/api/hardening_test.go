package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/conn"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Clients that send headers and then trickle their body are answered 408
// and dropped within request_body_timeout, and never count in /load.
func TestHardening_SlowBodiesAreDroppedAndNeverCountAsLoad(t *testing.T) {
	const clients = 300
	env := startServer(t, map[string]any{"request_body_timeout": 1.0})
	addr := strings.TrimPrefix(env.URL, "http://")
	start := time.Now()
	var wg sync.WaitGroup
	answers := make(chan string, clients)
	for range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				answers <- "dial: " + err.Error()
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
			// One more byte a second: the server must not wait for the rest.
			go func() {
				for range 5 {
					time.Sleep(400 * time.Millisecond)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers <- "read: " + err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			answers <- fmt.Sprintf("%d close=%v %s", resp.StatusCode, resp.Close, body)
		})
	}
	// While they trickle, the load signal stays at zero.
	for time.Since(start) < 800*time.Millisecond {
		if r := env.Get("/load"); r.Body != `{"server_load":0}` {
			t.Fatalf("/load = %s while slow bodies are pending", r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(answers)
	want := `408 close=true {"error":{"message":"The request body was not received within 1 s.","type":"Request Timeout","param":null,"code":408}}`
	n := 0
	for a := range answers {
		if a != want {
			t.Errorf("answer %q", a)
			break
		}
		n++
	}
	if n != clients || elapsed > 3*time.Second {
		t.Errorf("%d of %d clients answered 408 within %v", n, clients, elapsed)
	}
	if r := env.Get("/load"); r.Body != `{"server_load":0}` {
		t.Errorf("/load after = %s", r.Body)
	}
}

// net/http's own answers (before any handler) carry a JSON body too.
func TestHardening_StdlibErrorsAreJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), MaxHeaderBytes: 1024}
	go func() { _ = srv.Serve(conn.JSONErrorListener(ln)) }()
	defer srv.Close()
	tests := []struct {
		name, request string
		status        int
		typ, message  string
	}{
		{"431", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n", 431,
			"Request Header Fields Too Large", "Request Header Fields Too Large"},
		{"400 no host", "GET / HTTP/1.1\r\n\r\n", 400, "Bad Request", "Bad Request: missing required Host header"},
		{"400 garbage", "NOT HTTP\r\n\r\n", 400, "Bad Request", "Bad Request"},
		{"501", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
			"Not Implemented", "Unsupported transfer encoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, tt.request)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			var e wire.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tt.status ||
				resp.Header.Get("Content-Type") != "application/json" || e.Error.Code != tt.status ||
				e.Error.Type != tt.typ || !strings.HasPrefix(e.Error.Message, tt.message) {
				t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
			}
		})
	}
}

func TestHardening_ResponseFormatIsTypeChecked(t *testing.T) {
	env := startServer(t, nil)
	tests := []struct {
		rf     string
		status int
		msg    string
	}{
		{`5`, 400, "Invalid type for field 'response_format': expected object"},
		{`"json"`, 400, "Invalid type for field 'response_format': expected object"},
		{`{}`, 400, "Field required: response_format.type"},
		{`{"type":7}`, 400, "Invalid type for field 'response_format.type': expected string"},
		{`{"type":"yaml"}`, 400, "response_format.type must be 'text', 'json_object', 'json_schema' or 'structural_tag', got 'yaml'"},
		{`{"type":"json_object"}`, 200, ""},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{}}}`, 200, ""},
		{`null`, 200, ""},
	}
	for _, tt := range tests {
		r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1,"response_format":`+tt.rf+`}`)
		if r.Status != tt.status {
			t.Errorf("%s: %d %s", tt.rf, r.Status, r.Body)
			continue
		}
		if tt.status == 400 {
			if msg, _, _, _ := errorOf(t, r); msg != tt.msg {
				t.Errorf("%s: message %q", tt.rf, msg)
			}
		}
	}
}

// A client that stops reading stops being decoded: once its unread tokens
// reach max_unflushed_tokens its sequence is aborted and its KV freed, long
// before its max_tokens would end it; when it reads again it gets what was
// produced, an error event and [DONE].
func TestHardening_StuckReaderIsAbortedAndItsKVFreed(t *testing.T) {
	env := startServer(t, map[string]any{"max_unflushed_tokens": 64, "speedup_ratio": 1.0,
		"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 1.0})
	c := env.startNonReader()
	start := time.Now()
	testutil.WaitFor(t, 2*time.Second, "the sequence to run", func() bool { return env.engines[0].Load().Running == 1 })
	// 20000 tokens at 1 ms would hold the slot and KV for 20 s. Note when
	// the stream first has a blocked write with the limit reached: from
	// then on the documented bound (two 100 ms scans plus one pass) runs.
	var stuckAt time.Time
	testutil.WaitFor(t, 5*time.Second, "the stuck stream's KV to be freed", func() bool {
		if stuckAt.IsZero() && env.srv.StuckStreams(64) > 0 {
			stuckAt = time.Now()
		}
		l := env.engines[0].Load()
		return l.Running == 0 && l.ActiveBlocks == 0
	})
	freed := time.Now()
	if stuckAt.IsZero() {
		t.Fatal("the KV was freed but no stream was ever seen stuck")
	}
	// 200 ms documented; 1 s leaves room for a busy shared machine.
	if d := freed.Sub(stuckAt); d > time.Second {
		t.Errorf("KV freed %v after the stream got stuck, want about 200 ms", d)
	}
	t.Logf("stuck %v after the request started; KV freed %v later", stuckAt.Sub(start), freed.Sub(stuckAt))

	// The client reads again: tokens, then the error event and [DONE].
	s := readUntilDone(c)
	i := strings.LastIndex(s, `data: {"error":`)
	if i < 0 || !strings.Contains(s[i:], `"code":408}}`) || !strings.Contains(s[i:], "data: [DONE]") ||
		!strings.Contains(s[i:], "64 or more generated tokens were left unread") {
		t.Errorf("stream end: %q", s[max(0, len(s)-400):])
	}
	testutil.WaitFor(t, 2*time.Second, "the request to end", env.idle)
}

// readUntilDone reads a raw connection (10 s at most) until it has seen
// "data: [DONE]" or the connection ends, and returns what it read.
func readUntilDone(c net.Conn) string {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var all []byte
	buf := make([]byte, 64<<10)
	for !strings.Contains(string(all[max(0, len(all)-64):]), "data: [DONE]") {
		n, err := c.Read(buf)
		all = append(all, buf[:n]...)
		if err != nil {
			break
		}
	}
	return string(all)
}
