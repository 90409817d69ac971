package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// exchange records the status and retry headers of every HTTP response
// an SDK client received.
type exchange struct {
	status     int
	retryAfter string
	retryMs    string
}

type recorder struct {
	mu  sync.Mutex
	log []exchange
}

func (r *recorder) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		r.mu.Lock()
		r.log = append(r.log, exchange{resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms")})
		r.mu.Unlock()
	}
	return resp, err
}

// The OpenAI SDK's own retry logic meets "first 3: rate_limit": three 429s
// with Retry-After, and the fourth attempt succeeds. The SDK waits what the
// server asked (300 ms × 3) rather than its own backoff (0.5 s, 1 s, 2 s).
func TestFaults_FirstThreeRateLimitedAndTheSDKRetriesThrough(t *testing.T) {
	env := startServer(t, map[string]any{"failure_script": "first 3: rate_limit retry_after 300ms; then ok"})
	rec := &recorder{}
	c := env.sdkClient(option.WithMaxRetries(3), option.WithMiddleware(rec.middleware))
	start := time.Now()
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(4)})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("SDK call failed despite retries: %v", err)
	}
	if resp.Choices[0].Message.Content != " puzo bevi funa jita" {
		t.Errorf("content %q", resp.Choices[0].Message.Content)
	}
	want := []exchange{{429, "1", "300"}, {429, "1", "300"}, {429, "1", "300"}, {200, "", ""}}
	if fmt.Sprint(rec.log) != fmt.Sprint(want) {
		t.Errorf("exchanges = %v, want %v", rec.log, want)
	}
	if elapsed < 850*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("SDK took %v; it should have waited the server's 3 × 300 ms", elapsed)
	}

	// Without retries: exactly the first three calls fail, the fourth works.
	env = startServer(t, map[string]any{"failure_script": "first 3: rate_limit; then ok"})
	c = env.sdkClient()
	for i := 1; i <= 5; i++ {
		_, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
			Model: "mocker-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
			MaxTokens: openai.Int(2)})
		var apiErr *openai.Error
		if i <= 3 {
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "1" {
				t.Errorf("call %d: %v", i, err)
			}
		} else if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

// streamTokens sends a streaming chat request and returns every SSE data
// payload with its arrival time, the response, and how the body ended.
type timedEvent struct {
	data string
	at   time.Time
}

func streamRaw(t *testing.T, env *testEnv, body string, headers ...string) (*http.Response, []timedEvent, error) {
	t.Helper()
	return streamRawAt(t, env, "/v1/chat/completions", body, headers...)
}

// streamRawAt is streamRaw on another endpoint.
func streamRawAt(t *testing.T, env *testEnv, path, body string, headers ...string) (*http.Response, []timedEvent, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", env.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := env.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []timedEvent
	br := bufio.NewReader(resp.Body)
	for {
		ev, err := readEvent(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return resp, evs, err
		}
		evs = append(evs, timedEvent{ev, time.Now()})
	}
}

// tokenCount is the number of token ids a chunk carries (return_token_ids).
func tokenCount(t *testing.T, data string) int {
	t.Helper()
	var c struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return 0
	}
	n := 0
	for _, ch := range c.Choices {
		n += len(ch.TokenIDs)
	}
	return n
}

const streamTokensBody = helloChat + `,"max_tokens":20,"stream":true,"return_token_ids":true}`

func TestFaults_TruncateDeliversExactlyKTokensThenClosesWithoutDone(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true})
	resp, evs, err := streamRaw(t, env, streamTokensBody, "X-Mocker-Fault", "truncate;after=5")
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	tokens := 0
	for _, ev := range evs {
		if ev.data == "[DONE]" || strings.Contains(ev.data, `"error"`) || strings.Contains(ev.data, `"finish_reason":"`) {
			t.Errorf("unexpected event after truncation: %s", ev.data)
		}
		tokens += tokenCount(t, ev.data)
	}
	if tokens != 5 || resp.StatusCode != 200 || !resp.Close {
		t.Errorf("tokens %d, status %d, connection closed %v; want 5, 200, true", tokens, resp.StatusCode, resp.Close)
	}

	// The OpenAI SDK sees a stream of 5 content chunks that simply ends.
	env = startServer(t, map[string]any{"failure_script": "every 2nd: truncate after 5"})
	c := env.sdkClient()
	for i, want := range []int{20, 5, 20, 5} {
		s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(20)})
		chunks := 0
		for s.Next() {
			if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				chunks++
			}
		}
		if s.Err() != nil || chunks != want {
			t.Errorf("request %d: %d content chunks, err %v; want %d", i+1, chunks, s.Err(), want)
		}
		s.Close()
	}
	testutil.WaitFor(t, 2*time.Second, "truncated streams to release the engine", env.idle)
}

func TestFaults_StreamErrorSendsAnErrorEventThenDone(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true})
	_, evs, err := streamRaw(t, env, streamTokensBody, "X-Mocker-Fault", "stream_error;after=3")
	if err != nil {
		t.Fatal(err)
	}
	n := len(evs)
	if n < 2 || evs[n-1].data != "[DONE]" {
		t.Fatalf("events %v", evs)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(evs[n-2].data), &e); err != nil || e.Error.Code != 500 || e.Error.Type != "InternalServerError" {
		t.Errorf("error event %s", evs[n-2].data)
	}
	tokens := 0
	for _, ev := range evs[:n-2] {
		tokens += tokenCount(t, ev.data)
	}
	if tokens != 3 {
		t.Errorf("%d tokens before the error, want 3", tokens)
	}
	// The SDK surfaces it as a stream error.
	env2 := startServer(t, map[string]any{"failure_script": "then stream_error after 2"})
	c := env2.sdkClient()
	s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(20)})
	for s.Next() {
	}
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "injected stream_error") {
		t.Errorf("SDK stream error = %v", s.Err())
	}
	s.Close()
}

// stall pauses the stream after N tokens for the configured time: the gap
// before token N+1 is the stall (the engine keeps a 10 ms decode pace).
// The bound is 300 ms ± 10 ms. A stall can never be shorter, so the lower
// bound is strict; above it, the test adds the scheduling noise of this
// (shared, 2-core) machine at that moment: the largest lateness of 10 ms
// sleeps taken in this process while the stream runs. Measured: 300.5–313
// ms on a busy machine, up to 329 ms with other race-enabled packages
// running.
func TestFaults_StallDelaysTheNextTokenByTheConfiguredTime(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true, "speedup_ratio": 1.0,
		"timing_model": "fixed", "fixed_prefill_ms": 5.0, "fixed_decode_ms": 10.0})
	stop := make(chan struct{})
	lateness := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		for {
			select {
			case <-stop:
				lateness <- worst
				return
			default:
			}
			start := time.Now()
			time.Sleep(10 * time.Millisecond)
			worst = max(worst, time.Since(start)-10*time.Millisecond)
		}
	}()
	_, evs, err := streamRaw(t, env, streamTokensBody, "X-Mocker-Fault", "stall;after=3;for=300ms")
	close(stop)
	noise := <-lateness
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []time.Time // one per token
	for _, ev := range evs {
		for range tokenCount(t, ev.data) {
			arrivals = append(arrivals, ev.at)
		}
	}
	if len(arrivals) != 20 || evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("%d tokens; last event %q", len(arrivals), evs[len(evs)-1].data)
	}
	gap := arrivals[3].Sub(arrivals[2])
	if d := gap - 300*time.Millisecond; d < -10*time.Millisecond || d > 10*time.Millisecond+noise {
		t.Errorf("gap before token 4 = %v, want 300 ms ± 10 ms (+%v scheduling noise)", gap, noise)
	}
	t.Logf("gap before token 4: %v (scheduling noise: sleeps up to %v late)", gap, noise)
}

func TestFaults_StatusFaultsAnswerLikeTheirServers(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true, "max_model_len": 1000})
	tests := []struct {
		fault, typ, retryAfter string
		status                 int
		msg                    string
	}{
		{"rate_limit;retry_after=2500ms", "RateLimitError", "3", 429, "Rate limit reached (injected fault)."},
		{"server_error", "InternalServerError", "", 500, "Internal Server Error (injected fault)"},
		{"unavailable", "ServiceUnavailableError", "1", 503, "The server is temporarily unavailable (injected fault)."},
		{"context_length", "BadRequestError", "", 400, "This model's maximum context length is 1000 tokens. However, you requested 5 output tokens and your prompt contains at least 996 input tokens, for a total of at least 1001 tokens."},
	}
	for _, tt := range tests {
		r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":5}`, "X-Mocker-Fault", tt.fault)
		msg, typ, _, code := errorOf(t, r)
		if r.Status != tt.status || int(code) != tt.status || typ != tt.typ || !strings.HasPrefix(msg, tt.msg) ||
			r.Header.Get("Retry-After") != tt.retryAfter {
			t.Errorf("%s: %d %s (Retry-After %q)", tt.fault, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	// A malformed header is a 400 when headers are allowed.
	r := env.post("/v1/chat/completions", helloChat+`}`, "X-Mocker-Fault", "explode")
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, `unknown fault "explode"`) {
		t.Errorf("malformed header: %d %s", r.Status, r.Body)
	}
}

func TestFaults_HeadersAreIgnoredUnlessAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		env := startServer(t, map[string]any{"allow_fault_headers": allowed})
		r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`, "X-Mocker-Fault", "server_error")
		if want := map[bool]int{false: 200, true: 500}[allowed]; r.Status != want {
			t.Errorf("allowed=%v: %d, want %d", allowed, r.Status, want)
		}
	}
}

type faultCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *faultCounter) ObserveInjectedFault(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[kind]++
}

// A seeded failure rate fails the same requests on two runs.
func TestFaults_SeededRateFailsTheSameRequestsOnTwoRuns(t *testing.T) {
	run := func() (failed []int, counted int) {
		obs := &faultCounter{n: map[string]int{}}
		env := startServer(t, map[string]any{"failure_rate": 0.3, "failure_types": []any{"server_error", "unavailable"},
			"seed": 42}, Deps{FaultObserver: obs})
		for i := range 60 {
			if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`); r.Status != 200 {
				failed = append(failed, i)
			}
		}
		return failed, obs.n["server_error"] + obs.n["unavailable"]
	}
	a, na := run()
	b, _ := run()
	if fmt.Sprint(a) != fmt.Sprint(b) || len(a) < 8 || len(a) > 30 || na != len(a) {
		t.Errorf("run 1 failed %v (counted %d), run 2 failed %v", a, na, b)
	}
}

func TestFaults_AdminChangeAppliesToTheNextRequest(t *testing.T) {
	if r := startServer(t, nil).get("/admin/faults"); r.Status != 404 {
		t.Errorf("without an admin key: %d", r.Status)
	}
	env := startServer(t, map[string]any{"admin_key": "adm", "api_key": []any{"user"}})
	if r := env.get("/admin/faults", "Authorization", "Bearer user"); r.Status != 401 {
		t.Errorf("API key on the admin route: %d %s", r.Status, r.Body)
	}
	auth := []string{"Authorization", "Bearer user"}
	if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`, auth...); r.Status != 200 {
		t.Fatalf("before: %d", r.Status)
	}
	r := env.do("POST", "/admin/faults", "application/json", `{"failure_script":"first 1: unavailable retry_after 4s"}`,
		"Authorization", "Bearer adm")
	if r.Status != 200 || jsonOf(t, r.Body)["failure_script"] != "first 1: unavailable retry_after 4s" {
		t.Fatalf("admin POST: %d %s", r.Status, r.Body)
	}
	if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`, auth...); r.Status != 503 || r.Header.Get("Retry-After") != "4" {
		t.Errorf("next request: %d %v", r.Status, r.Header)
	}
	if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`, auth...); r.Status != 200 {
		t.Errorf("the one after: %d", r.Status)
	}
}

func TestFaults_TimeoutNeverAnswersUntilTheClientGivesUp(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Mocker-Fault", "timeout")
	start := time.Now()
	_, err := env.client.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 290*time.Millisecond {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
	testutil.WaitFor(t, 2*time.Second, "the abandoned request to leave /load", func() bool { return env.srv.InFlight() == 0 })
}

func TestFaults_SlowFirstTokenAddsToTTFT(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true})
	start := time.Now()
	_, evs, err := streamRaw(t, env, streamTokensBody, "X-Mocker-Fault", "slow_first_token;for=250ms")
	if err != nil || len(evs) == 0 {
		t.Fatal(err)
	}
	if ttft := evs[0].at.Sub(start); ttft < 250*time.Millisecond || ttft > 600*time.Millisecond {
		t.Errorf("TTFT %v, want 250 ms + a little", ttft)
	}
}

func TestFaults_ResetSendsATCPReset(t *testing.T) {
	env := startServer(t, map[string]any{"allow_fault_headers": true})
	_, evs, err := streamRaw(t, env, streamTokensBody, "X-Mocker-Fault", "reset;after=2")
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("body error %v, want connection reset", err)
	}
	tokens := 0
	for _, ev := range evs {
		tokens += tokenCount(t, ev.data)
	}
	if tokens != 2 {
		t.Errorf("%d tokens before the reset, want 2", tokens)
	}
	// Non-streaming: no response at all.
	req, _ := http.NewRequest("POST", env.URL+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Mocker-Fault", "reset")
	if _, err := env.client.Do(req); err == nil {
		t.Error("non-streaming reset answered")
	}
	testutil.WaitFor(t, 2*time.Second, "reset requests to release the engine", env.idle)
}
