package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// loadConfig loads a test configuration: port 0, no simulated delay, plus
// the overlay.
func loadConfig(t *testing.T, overlay map[string]any) *config.Config {
	t.Helper()
	o := map[string]any{"port": 0}
	maps.Copy(o, overlay)
	return testcfg.Load(t, o)
}

// running is a serve() call in progress.
type running struct {
	url    string
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

// startServe runs serve in the background and waits until it listens.
func startServe(t *testing.T, cfg *config.Config, grace time.Duration) *running {
	t.Helper()
	return startWith(t, cfg, serverOptions{ShutdownGrace: grace}, nil)
}

// startWith runs serve(ctx, cfg, opts) in the background until the test
// ends and waits until it listens. after, when non-nil, runs once serve has
// returned (engines stopped) — e.g. closing the ZMQ publishers, exactly as
// runServer does. Every test that needs the real server starts it here.
func startWith(t *testing.T, cfg *config.Config, opts serverOptions, after func()) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	r := &running{cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	opts.Ready = func(u string) { ready <- u }
	go func() {
		err := serve(ctx, cfg, opts)
		if after != nil {
			after()
		}
		r.done <- err
	}()
	select {
	case r.url = <-ready:
	case err := <-r.done:
		t.Fatalf("serve returned early: %v", err)
	case <-time.After(60 * time.Second): // loading a large tokenizer (Gemma 3) under -race on a busy machine takes a while
		cancel()
		<-r.done
		t.Fatal("serve did not become ready")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("serve = %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not return")
		}
		r.client.CloseIdleConnections()
	})
	return r
}

// stop cancels serve and returns its result and how long it took.
func (r *running) stop(t *testing.T, bound time.Duration) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err, time.Since(start)
	case <-time.After(bound):
		t.Fatalf("serve did not return within %v", bound)
		return nil, 0
	}
}

func (r *running) post(t *testing.T, ctx context.Context, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const helloChat = `{"messages":[{"role":"user","content":"Hello!"}]`

func TestServe_SDKAgainstRealServer(t *testing.T) {
	r := startServe(t, loadConfig(t, map[string]any{"dp_size": 2}), 0)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(r.url) || strings.HasSuffix(r.url, ":0") {
		t.Fatalf("url = %s", r.url)
	}
	c := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(r.client), option.WithMaxRetries(0))
	ctx := context.Background()
	for range 2 { // both ranks
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "mocker-model", MaxTokens: openai.Int(4),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != " puzo bevi funa jita" {
			t.Errorf("content = %q", resp.Choices[0].Message.Content)
		}
	}
	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: "mocker-model", MaxTokens: openai.Int(4),
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{11, 12, 13, 14}},
	})
	var text string
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text += ch.Text
		}
	}
	if stream.Err() != nil || text != " huvo baji neru fubu" {
		t.Errorf("stream: %q %v", text, stream.Err())
	}
	_, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "nope",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("unknown model: %v", err)
	}
	if err, _ := r.stop(t, 5*time.Second); err != nil {
		t.Errorf("serve = %v", err)
	}
}

// Shutdown waits for an in-flight stream to finish.
func TestServe_GracefulShutdownCompletesStreams(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 5.0, "fixed_decode_ms": 10.0})
	r := startServe(t, cfg, 5*time.Second)
	resp := r.post(t, context.Background(), "/v1/chat/completions", helloChat+`,"max_tokens":30,"stream":true}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() { err, _ := r.stop(t, 5*time.Second); result <- err }()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || strings.Count(string(rest), `"content"`) != 30 {
		t.Errorf("stream did not complete:\n%s", rest)
	}
	if err := <-result; err != nil {
		t.Errorf("serve = %v", err)
	}
}

// After the grace period, streams still open are cancelled with an error
// event and serve returns nil.
func TestServe_ShutdownCancelsAfterGrace(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 5.0, "fixed_decode_ms": 20.0})
	const grace = 200 * time.Millisecond
	r := startServe(t, cfg, grace)
	resp := r.post(t, context.Background(), "/v1/chat/completions", helloChat+`,"max_tokens":10000,"stream":true}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var rest []byte
	var wg sync.WaitGroup
	wg.Go(func() { rest, _ = io.ReadAll(br) })
	err, took := r.stop(t, grace+3*time.Second)
	if err != nil {
		t.Errorf("serve = %v", err)
	}
	if took < grace {
		t.Errorf("serve returned after %v, before the grace period", took)
	}
	wg.Wait()
	if !strings.Contains(string(rest), `data: {"error":{"message":"The server is shutting down.","type":"ServiceUnavailableError","param":null,"code":503}}`) ||
		!strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("stream tail:\n%s", tail(string(rest), 400))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// syncBuffer is a goroutine-safe stderr for run().
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// manualGate is a gateScheduler the test drives: it records what serve
// scheduled, and the gate opens only when the test calls open.
type manualGate struct {
	scheduled chan time.Duration
	mu        sync.Mutex
	openFn    func()
	stopped   bool
}

func newManualGate() *manualGate {
	return &manualGate{scheduled: make(chan time.Duration, 1)}
}

func (g *manualGate) schedule(d time.Duration, open func()) (stop func()) {
	g.mu.Lock()
	g.openFn = open
	g.mu.Unlock()
	g.scheduled <- d
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.stopped = true
	}
}

// open opens the gate now, as the scheduled time elapsing would.
func (g *manualGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.openFn()
	}
}

// The production path: run() with serve as the real server, the bound port
// printed on stderr, the startup gate, and exit status 0 on shutdown. The
// test opens the gate itself, so both sides of it are checked without
// racing the startup time.
func TestRun_ServesUntilCancelled(t *testing.T) {
	gate := newManualGate()
	serveFunc = func(ctx context.Context, cfg *config.Config, admin adminFlags, _, stderr io.Writer) error {
		return runServerGated(ctx, cfg, admin, stderr, gate.schedule)
	}
	defer func() { serveFunc = printConfig }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--port", "0", "--speedup-ratio", "inf", "--startup-time", "0.3", "--log-level", "warn"}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)\n`)
	var url string
	testutil.WaitUntil(t, 5*time.Second, func() string {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
			return ""
		}
		return "no listening line; stderr:\n" + stderr.String()
	})
	select {
	case d := <-gate.scheduled:
		if d != 300*time.Millisecond {
			t.Errorf("startup gate scheduled after %v, want 300ms (--startup-time 0.3)", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("startup gate never scheduled")
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	health := func() int {
		resp, err := client.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := health(); s != 503 {
		t.Errorf("/health during startup = %d", s)
	}
	gate.open()
	if s := health(); s != 200 {
		t.Errorf("/health once the startup time elapsed = %d", s)
	}
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(helloChat+`,"max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"content":" puzo bevi funa jita"`) {
		t.Errorf("chat = %s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil || exitCode(err) != 0 {
			t.Errorf("run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return")
	}
	if stdout.String() != "" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

// A port that cannot be bound is a startup error (exit status 1).
func TestServe_BindFailure(t *testing.T) {
	port := testutil.Port(testutil.Listen(t).Addr())
	cfg := loadConfig(t, map[string]any{"port": port})
	err := serve(context.Background(), cfg, serverOptions{})
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "listen on 127.0.0.1:") {
		t.Errorf("serve = %v", err)
	}
}
