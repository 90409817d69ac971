package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Scenario S18 (seed-0 chat "Hello!", 4 tokens; see internal/plan's
// TestGoldenS18) streamed: exact events, bytes and key order.
func TestStream_ChatS18Exact(t *testing.T) {
	env := startServer(t, nil)
	r := env.post("/v1/chat/completions",
		helloChat+`,"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`,
		"X-Request-Id", "t")
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	for k, v := range map[string]string{
		"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
		"X-Accel-Buffering": "no", "Access-Control-Allow-Origin": "*",
	} {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	const p = `{"id":"chatcmpl-t","object":"chat.completion.chunk","created":1760000000,"model":"mocker-model",`
	want := []string{
		p + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		p + `"choices":[{"index":0,"delta":{"content":" puzo"},"logprobs":null,"finish_reason":null}]}`,
		p + `"choices":[{"index":0,"delta":{"content":" bevi"},"logprobs":null,"finish_reason":null}]}`,
		p + `"choices":[{"index":0,"delta":{"content":" funa"},"logprobs":null,"finish_reason":null}]}`,
		p + `"choices":[{"index":0,"delta":{"content":" jita"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
		p + `"choices":[],"usage":{"prompt_tokens":11,"total_tokens":15,"completion_tokens":4}}`,
		`[DONE]`,
	}
	got := sseEvents(t, r.Body)
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, ev := range got[:6] {
		if !json.Valid([]byte(ev)) {
			t.Errorf("invalid JSON %s", ev)
		}
	}
}

// Completions stream: every chunk has all fields, echo
// prefixes the first chunk, the final chunk carries the last text, usage
// and [DONE] follow.
func TestStream_CompletionsExact(t *testing.T) {
	env := startServer(t, map[string]any{"enable_request_id_headers": true})
	r := env.post("/v1/completions",
		`{"prompt":[11,12,13,14],"max_tokens":3,"stream":true,"echo":true,"stream_options":{"continuous_usage_stats":true},"logprobs":1}`,
		"X-Request-Id", "abc")
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if r.Header.Get("X-Request-Id") != "abc" {
		t.Errorf("X-Request-Id = %q", r.Header.Get("X-Request-Id"))
	}
	const p = `{"id":"cmpl-abc","object":"text_completion","created":1760000000,"model":"mocker-model",`
	got := sseEvents(t, r.Body)
	if len(got) != 5 {
		t.Fatalf("events = %d:\n%s", len(got), strings.Join(got, "\n"))
	}
	// The echoed prompt is the literal detokenization of the ids (reserved
	// ids 11–14 render as empty text), so the first text is the first token's.
	want := []string{
		p + `"choices":[{"index":0,"text":" huvo","logprobs":{"text_offset":[0],"token_logprobs":[-0.4],"tokens":[" huvo"],"top_logprobs":[{" huvo":-0.4}]},"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":4,"total_tokens":5,"completion_tokens":1}}`,
		p + `"choices":[{"index":0,"text":" baji","logprobs":{"text_offset":[5],"token_logprobs":[-0.8],"tokens":[" baji"],"top_logprobs":[{" baji":-0.8}]},"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":4,"total_tokens":6,"completion_tokens":2}}`,
		p + `"choices":[{"index":0,"text":" neru","logprobs":{"text_offset":[10],"token_logprobs":[-1],"tokens":[" neru"],"top_logprobs":[{" neru":-1}]},"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":4,"total_tokens":7,"completion_tokens":3}}`,
		p + `"choices":[],"usage":{"prompt_tokens":4,"total_tokens":7,"completion_tokens":3}}`,
		`[DONE]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Text prompt with echo and n=2: each choice's first chunk starts with
	// the prompt; return_token_ids adds prompt_token_ids there.
	r = env.post("/v1/completions", `{"prompt":"Hi there","max_tokens":2,"stream":true,"echo":true,"n":2,"return_token_ids":true}`)
	texts := map[float64]string{}
	firsts := 0
	for _, ev := range sseEvents(t, r.Body) {
		if ev == "[DONE]" {
			continue
		}
		m := jsonOf(t, ev)
		if m["usage"] != nil {
			t.Errorf("usage in %s", ev)
		}
		for _, c := range m["choices"].([]any) {
			ch := c.(map[string]any)
			if texts[ch["index"].(float64)] == "" {
				firsts++
				if !strings.HasPrefix(ch["text"].(string), "Hi there") || ch["prompt_token_ids"] == nil {
					t.Errorf("first chunk %s", ev)
				}
			} else if ch["prompt_token_ids"] != nil {
				t.Errorf("prompt_token_ids again in %s", ev)
			}
			texts[ch["index"].(float64)] += ch["text"].(string)
		}
	}
	if firsts != 2 || !strings.HasPrefix(texts[0], "Hi there") || !strings.HasPrefix(texts[1], "Hi there") {
		t.Errorf("texts = %v", texts)
	}
}

// A chat stream with every option that changes chunk contents.
func TestStream_ChatOptions(t *testing.T) {
	env := startServer(t, map[string]any{"enable_prompt_tokens_details": true, "block_size": 4})
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2,"stream":true,"logprobs":true,"top_logprobs":2,"return_token_ids":true,"stream_options":{"continuous_usage_stats":true}}`)
	ev := sseEvents(t, r.Body)
	if len(ev) != 5 {
		t.Fatalf("events:\n%s", strings.Join(ev, "\n"))
	}
	role := jsonOf(t, ev[0])
	if !slices.Equal(keys(t, ev[0]), []string{"id", "object", "created", "model", "choices", "usage", "prompt_token_ids"}) {
		t.Errorf("role chunk keys %v", keys(t, ev[0]))
	}
	if u := role["usage"].(map[string]any); u["completion_tokens"] != 0.0 {
		t.Errorf("role usage %v", u)
	}
	content := jsonOf(t, ev[1])
	ch := content["choices"].([]any)[0].(map[string]any)
	lp := ch["logprobs"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if lp["token"] != " puzo" || lp["logprob"] != -0.9 || len(lp["top_logprobs"].([]any)) != 2 {
		t.Errorf("logprobs %v", lp)
	}
	if top := lp["top_logprobs"].([]any)[1].(map[string]any); top["token"] != " puzu" || top["logprob"] != -1.0 {
		t.Errorf("candidate %v", top)
	}
	if ids := ch["token_ids"].([]any); len(ids) != 1 || ids[0] != 5398.0 {
		t.Errorf("token_ids %v", ids)
	}
	final := jsonOf(t, ev[2])
	fch := final["choices"].([]any)[0].(map[string]any)
	if fch["finish_reason"] != "length" || fch["delta"].(map[string]any)["content"] != " bevi" {
		t.Errorf("final %s", ev[2])
	}
	usage := jsonOf(t, ev[3])["usage"].(map[string]any)
	if usage["completion_tokens"] != 2.0 || usage["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 0.0 {
		t.Errorf("usage chunk %s", ev[3])
	}
}

// keys returns the top-level keys of a JSON object in order.
func keys(t *testing.T, s string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A client that disconnects mid-stream cancels all of its engine sequences.
func TestStream_DisconnectCancels(t *testing.T) {
	env := startServer(t, map[string]any{
		"speedup_ratio": 1.0, "timing_model": "fixed", "fixed_prefill_ms": 5.0, "fixed_decode_ms": 20.0,
		"block_size": 4,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/v1/chat/completions",
		strings.NewReader(helloChat+`,"max_tokens":1000,"n":3,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 4 {
		if _, err := readEvent(br); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	// The engine publishes its load right after delivering a pass's tokens.
	testutil.WaitFor(t, time.Second, "3 running sequences", func() bool {
		l := env.engines[0].Load()
		return l.ActiveBlocks > 0 && l.Running == 3
	})
	if n := env.srv.InFlight(); n != 1 {
		t.Errorf("in flight = %d, want 1", n)
	}
	cancel() // closes the connection
	resp.Body.Close()
	testutil.WaitFor(t, 2*time.Second, "engine work released", env.idle)
	if r := env.Get("/load"); r.Body != `{"server_load":0}` {
		t.Errorf("/load = %s", r.Body)
	}
}

// A non-streaming request whose client leaves is cancelled the same way.
func TestNonStream_DisconnectCancels(t *testing.T) {
	env := startServer(t, map[string]any{
		"speedup_ratio": 1.0, "timing_model": "fixed", "fixed_prefill_ms": 5.0, "fixed_decode_ms": 20.0,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"Hello","max_tokens":1000}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := env.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("request finished before its deadline")
	}
	testutil.WaitFor(t, 2*time.Second, "engine work released", env.idle)
}
