package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/conn"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testEnv is a real HTTP server (httptest: an http.Server on 127.0.0.1:0)
// over live engines, torn down at the end of the test.
type testEnv struct {
	t       testing.TB
	cfg     *config.Config
	srv     *pipeline.Server
	engines []*engine.Engine
	ts      *httptest.Server
	URL     string
	client  *http.Client
}

// fixedNow is the "created" timestamp of every test response.
var fixedNow = func() time.Time { return time.Unix(1760000000, 0) }

// testConfig loads a configuration from an overlay of JSON keys on top of
// the test defaults (no simulated delay).
func testConfig(t testing.TB, overlay map[string]any) *config.Config {
	t.Helper()
	return testcfg.Load(t, overlay)
}

// startServer runs the engines and the HTTP server of a configuration.
func startServer(t *testing.T, overlay map[string]any, deps ...settings.Deps) *testEnv {
	t.Helper()
	d := settings.Deps{Now: fixedNow, Version: "test-version"}
	if len(deps) > 0 {
		d = deps[0]
	}
	return startServerWith(t, testConfig(t, overlay), func(r int) engine.Options { return engine.Options{Rank: r} }, d)
}

// startServerWith runs a server over engines built with per-rank options.
func startServerWith(t testing.TB, cfg *config.Config, opts func(rank int) engine.Options, d settings.Deps) *testEnv {
	t.Helper()
	return startServerConn(t, cfg, opts, d, conn.ConnContext)
}

// startServerConn is startServerWith with the http.Server's ConnContext
// hook given: nil serves every stream through net/http from its handler.
func startServerConn(t testing.TB, cfg *config.Config, opts func(rank int) engine.Options, d settings.Deps,
	connContext func(context.Context, net.Conn) context.Context) *testEnv {
	t.Helper()
	return startServerEdited(t, cfg, opts, d, connContext, nil)
}

// startServerEdited is startServerConn with the server's options changed
// by edit (nil: as production builds them) before the server starts.
func startServerEdited(t testing.TB, cfg *config.Config, opts func(rank int) engine.Options, d settings.Deps,
	connContext func(context.Context, net.Conn) context.Context, edit func(*settings.Options)) *testEnv {
	t.Helper()
	engines := make([]*engine.Engine, cfg.DPSize)
	for r := range engines {
		e, err := engine.New(cfg.EngineConfig(nil), opts(r))
		if err != nil {
			t.Fatal(err)
		}
		engines[r] = e
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() { _ = e.Run(ctx) })
	}
	if d.Now == nil {
		d.Now = fixedNow
	}
	if d.HTTP == nil {
		// Every request goes through the HTTP metrics middleware, as in
		// production, so each test also checks that it changes nothing.
		d.HTTP = metrics.New(metrics.Options{Model: cfg.ServedName()}, "test")
	}
	so := testOptions(cfg)
	if edit != nil {
		edit(&so)
	}
	srv := NewServer(so, engines, d)
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnContext = connContext // ConnContext: streams are delivered as in production
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		wg.Wait()
	})
	return &testEnv{t: t, cfg: cfg, srv: srv, engines: engines, ts: ts, URL: ts.URL, client: ts.Client()}
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// do sends a request and reads the whole response.
func (e *testEnv) do(method, path, contentType, body string, headers ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// post sends a JSON body.
func (e *testEnv) post(path, body string, headers ...string) response {
	e.t.Helper()
	return e.do(http.MethodPost, path, "application/json", body, headers...)
}

func (e *testEnv) Get(path string, headers ...string) response {
	e.t.Helper()
	return e.do(http.MethodGet, path, "", "", headers...)
}

// jsonOf parses a JSON body into a generic value.
func jsonOf(t testing.TB, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

// sseEvents splits an SSE body into its data payloads, checking the framing
// (only "data: " lines, each event ends with a blank line).
func sseEvents(t *testing.T, body string) []string {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("SSE body does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("malformed SSE event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

// readEvent reads one SSE event from a live stream.
func readEvent(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if _, err := r.ReadString('\n'); err != nil { // the blank line
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "data: "), nil
}

// holdStream starts a 500-token chat stream (extra headers as name, value
// pairs), waits for its first event and returns the function that ends it.
func (e *testEnv) holdStream(headers ...string) (end func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+"/v1/chat/completions",
		strings.NewReader(helloChat+`,"max_tokens":500,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if _, err := readEvent(bufio.NewReader(resp.Body)); err != nil {
		cancel()
		e.t.Fatal(err)
	}
	return func() {
		cancel()
		resp.Body.Close()
	}
}

// idle reports whether every engine has no running, waiting or active work.
func (e *testEnv) idle() bool {
	for _, eng := range e.engines {
		l := eng.Load()
		if l.Running != 0 || l.Waiting != 0 || l.ActiveBlocks != 0 {
			return false
		}
	}
	return e.srv.InFlight() == 0
}

// errorOf parses the nested error shape and returns its fields.
func errorOf(t *testing.T, r response) (message, typ string, param any, code float64) {
	t.Helper()
	m := jsonOf(t, r.Body)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no nested error in %s", r.Body)
	}
	if len(e) != 4 {
		t.Errorf("error object has keys %v, want message,type,param,code", e)
	}
	code, _ = e["code"].(float64)
	return e["message"].(string), e["type"].(string), e["param"], code
}

const helloChat = `{"messages":[{"role":"user","content":"Hello!"}]`

// startNonReader opens a connection with a 4 KiB receive buffer (set
// before connecting, so the window is small from the handshake on) and
// sends a streamed chat request with ~2 KB chunks (20 top logprobs) that
// the test then does not read: the server's writes soon fill the socket.
// The connection is closed when the test ends.
func (e *testEnv) startNonReader() net.Conn {
	e.t.Helper()
	return e.startNonReaderOf("/v1/chat/completions", helloChat+`,"max_tokens":20000,"stream":true,"logprobs":true,"top_logprobs":20}`)
}

// startNonReaderOf is startNonReader with another streamed request.
func (e *testEnv) startNonReaderOf(path, body string) net.Conn {
	e.t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	return c
}
