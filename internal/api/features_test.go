package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestFeatures_FinishAndLength(t *testing.T) {
	env := startServer(t, map[string]any{"max_model_len": 64, "natural_output_len": 8})
	// Stop token id: finish stop, stop_reason the integer.
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":8,"stop_token_ids":[2165]}`)
	text, finish, m := choiceText(t, r.Body, 0)
	ch := m["choices"].([]any)[0].(map[string]any)
	if text != " puzo bevi funa" || finish != "stop" || ch["stop_reason"] != 2165.0 {
		t.Errorf("stop id: %q %q %v", text, finish, ch["stop_reason"])
	}
	// min_tokens defers the stop rule.
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":8,"stop":" bevi","min_tokens":3}`)
	if text, finish, _ := choiceText(t, r.Body, 0); finish != "length" || !strings.HasPrefix(text, " puzo bevi funa") {
		t.Errorf("min_tokens: %q %q", text, finish)
	}
	// include_stop_str_in_output keeps the stop string.
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":8,"stop":["zzz"," bevi"],"include_stop_str_in_output":true,"stream":true}`)
	var sb strings.Builder
	var stopReason any
	for _, ev := range sseEvents(t, r.Body) {
		if ev == "[DONE]" {
			continue
		}
		for _, c := range jsonOf(t, ev)["choices"].([]any) {
			c := c.(map[string]any)
			if s, ok := c["delta"].(map[string]any)["content"].(string); ok {
				sb.WriteString(s)
			}
			if c["finish_reason"] != nil {
				stopReason = c["stop_reason"]
			}
		}
	}
	if sb.String() != " puzo bevi" || stopReason != " bevi" {
		t.Errorf("include stop: %q %v", sb.String(), stopReason)
	}
	// A chat request without a max ends naturally (EOS counted, not shown).
	r = env.post("/v1/chat/completions", helloChat+`}`)
	_, finish, m = choiceText(t, r.Body, 0)
	if _, c, _ := usageOf(m); finish != "stop" || c < 1 || c > 16 {
		t.Errorf("natural end: %q %v tokens", finish, c)
	}
	// ignore_eos without a max runs to the remaining context.
	r = env.post("/v1/chat/completions", helloChat+`,"ignore_eos":true}`)
	_, finish, m = choiceText(t, r.Body, 0)
	if _, c, _ := usageOf(m); finish != "length" || c != 64-11 {
		t.Errorf("ignore_eos: %q %v tokens", finish, c)
	}
	// Completions without a max: min(16, N − p).
	r = env.post("/v1/completions", `{"prompt":"Hello"}`)
	if _, c, _ := usageOf(jsonOf(t, r.Body)); c != 16 {
		t.Errorf("completions default: %v tokens", c)
	}
}

func TestFeatures_RandomModeAndForceUsage(t *testing.T) {
	env := startServer(t, map[string]any{"output_len_mode": "random", "natural_output_len": 8, "enable_force_include_usage": true})
	// Random mode, seed-0 chat "Hello!", max tokens 16, natural length 8:
	// the natural end is drawn at 15 tokens of [1, 16] (the same example as
	// internal/plan's tests).
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":16}`)
	_, finish, m := choiceText(t, r.Body, 0)
	if _, c, _ := usageOf(m); finish != "stop" || c != 15 {
		t.Errorf("random mode: %q %v tokens", finish, c)
	}
	// Forced usage chunk without stream_options; no continuous usage.
	r = env.post("/v1/completions", `{"prompt":[11,12,13,14],"max_tokens":2,"stream":true,"ignore_eos":true}`)
	ev := sseEvents(t, r.Body)
	if len(ev) != 4 || !strings.Contains(ev[2], `"choices":[],"usage":{"prompt_tokens":4,"total_tokens":6,"completion_tokens":2}}`) ||
		!strings.Contains(ev[0], `"usage":null`) {
		t.Errorf("forced usage:\n%s", strings.Join(ev, "\n"))
	}
	// enable_force_include_usage wins over include_usage false.
	r = env.post("/v1/completions", `{"prompt":[11,12,13,14],"max_tokens":2,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":false}}`)
	if ev := sseEvents(t, r.Body); len(ev) != 4 {
		t.Errorf("forced usage with include_usage false: %d events", len(ev))
	}
}

func TestFeatures_Logprobs(t *testing.T) {
	env := startServer(t, nil)
	r := env.post("/v1/completions", `{"prompt":"Hi","max_tokens":2,"echo":true,"logprobs":2,"return_tokens_as_token_ids":true}`)
	// text_offset counts the echoed "Hi" (2 characters), then " jije" (5).
	want := `"text":"Hi jije zoni","logprobs":{"text_offset":[2,7],"token_logprobs":[-0.7,-0.8],"tokens":["token_id:3186","token_id:7287"],"top_logprobs":[{"token_id:3186":-0.7,"token_id:3187":-0.8},{"token_id:7287":-0.8,"token_id:7288":-0.9}]}`
	if !strings.Contains(r.Body, want) {
		t.Errorf("completions logprobs:\n%s\nwant substring\n%s", r.Body, want)
	}
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":1,"logprobs":true,"top_logprobs":0}`)
	want = `"logprobs":{"content":[{"token":" puzo","logprob":-0.9,"bytes":[32,112,117,122,111],"top_logprobs":[]}]}`
	if !strings.Contains(r.Body, want) {
		t.Errorf("chat logprobs:\n%s", r.Body)
	}
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":1,"logprobs":true,"top_logprobs":1,"return_tokens_as_token_ids":true,"stream":true}`)
	want = `"logprobs":{"content":[{"token":"token_id:5398","logprob":-0.9,"bytes":[116,111,107,101,110,95,105,100,58,53,51,57,56],"top_logprobs":[{"token":"token_id:5398","logprob":-0.9,"bytes":[116,111,107,101,110,95,105,100,58,53,51,57,56]}]}]},"finish_reason":"length"`
	if !strings.Contains(r.Body, want) {
		t.Errorf("streamed chat logprobs:\n%s", r.Body)
	}
}

// An engine-level rejection after the headers were sent becomes an SSE
// error event and [DONE], carrying the engine's own reason. The pre-check
// asks rank 0 and normally prevents it; here rank 1 has a smaller pool than
// rank 0, and the request is sent to rank 1.
func TestStream_EngineRejectionMidStream(t *testing.T) {
	small := testConfig(t, map[string]any{"num_gpu_blocks": 2, "block_size": 4})
	large := testConfig(t, map[string]any{"num_gpu_blocks": 100, "block_size": 4, "dp_size": 2})
	var engines []*engine.Engine
	for rank, cfg := range []*config.Config{large, small} {
		eng, err := engine.New(cfg.EngineConfig(nil), engine.Options{Rank: rank})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, eng)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, eng := range engines {
		wg.Go(func() { _ = eng.Run(ctx) })
	}
	srv := NewServer(testOptions(large), engines, settings.Deps{Now: fixedNow})
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); cancel(); wg.Wait() }()
	env := &testEnv{t: t, cfg: large, srv: srv, engines: engines, ts: ts, URL: ts.URL, client: ts.Client()}

	const reason = "This request needs 3 KV cache blocks but each engine has only 2 blocks of 4 tokens."
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2,"stream":true,"n":2}`, "X-data-parallel-rank", "1")
	ev := sseEvents(t, r.Body)
	want := []string{`{"error":{"message":"` + reason + `","type":"BadRequestError","param":null,"code":400}}`, "[DONE]"}
	if r.Status != 200 || len(ev) != 2 || ev[0] != want[0] || ev[1] != want[1] {
		t.Errorf("events %q", ev)
	}
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`, "X-data-parallel-rank", "1")
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || msg != reason {
		t.Errorf("non-streaming: %d %s", r.Status, r.Body)
	}
	testutil.WaitFor(t, time.Second, "idle", env.idle)
}
