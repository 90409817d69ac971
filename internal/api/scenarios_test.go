package api

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
)

// choiceText returns choice i's text (completions) or message content (chat).
func choiceText(t *testing.T, body string, i int) (text, finish string, m map[string]any) {
	t.Helper()
	m = jsonOf(t, body)
	chs, ok := m["choices"].([]any)
	if !ok || len(chs) <= i {
		t.Fatalf("no choice %d in %s", i, body)
	}
	ch := chs[i].(map[string]any)
	if msg, ok := ch["message"].(map[string]any); ok {
		text = msg["content"].(string)
	} else {
		text = ch["text"].(string)
	}
	return text, ch["finish_reason"].(string), m
}

func usageOf(m map[string]any) (p, c, total float64) {
	u := m["usage"].(map[string]any)
	return u["prompt_tokens"].(float64), u["completion_tokens"].(float64), u["total_tokens"].(float64)
}

// S12: max_model_len caps the default completions length; an explicit
// max_tokens beyond the context is refused with the exact token-id message.
func TestScenario_S12(t *testing.T) {
	env := startServer(t, map[string]any{"max_model_len": 8, "block_size": 4})
	r := env.post("/v1/completions", `{"prompt":[11,12,13,14]}`)
	text, finish, m := choiceText(t, r.Body, 0)
	if text != " huvo baji neru fubu" || finish != "length" {
		t.Errorf("S12: %q %q", text, finish)
	}
	if p, c, _ := usageOf(m); p != 4 || c != 4 {
		t.Errorf("usage %v %v", p, c)
	}
	r = env.post("/v1/completions", `{"prompt":[11,12,13,14],"max_tokens":6}`)
	msg, typ, param, code := errorOf(t, r)
	const want = "This model's maximum context length is 8 tokens. However, you requested 6 output tokens and your prompt contains 4 input tokens, for a total of 10 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=4)"
	if r.Status != 400 || msg != want || typ != "BadRequestError" || param != "input_tokens" || code != 400 {
		t.Errorf("S12 max_tokens 6: %d %q %q %v %v", r.Status, msg, typ, param, code)
	}
}

// S15: reasoning framing with ratio 0.6 (non-streamed and streamed).
func TestScenario_S15(t *testing.T) {
	env := startServer(t, map[string]any{"reasoning": map[string]any{"thinking_ratio": 0.6}})
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":10,"return_token_ids":true}`)
	content, finish, m := choiceText(t, r.Body, 0)
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if content != " rape. saze lama" || msg["reasoning"] != " bevi funa jita dife" || finish != "length" {
		t.Errorf("S15: content %q reasoning %v", content, msg["reasoning"])
	}
	ids := m["choices"].([]any)[0].(map[string]any)["token_ids"].([]any)
	want := []float64{3, 1152, 2165, 3225, 1571, 4, 5451, 16, 5876, 3840}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("ids = %v, want %v", ids, want)
			break
		}
	}
	if _, c, _ := usageOf(m); c != 10 {
		t.Errorf("completion_tokens %v", c)
	}

	// Streamed: reasoning deltas, then content deltas; boundary tokens
	// produce no chunk.
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":10,"stream":true}`)
	var reasoning, text strings.Builder
	chunks := 0
	for _, ev := range sseEvents(t, r.Body) {
		if ev == "[DONE]" {
			continue
		}
		for _, c := range jsonOf(t, ev)["choices"].([]any) {
			chunks++
			d := c.(map[string]any)["delta"].(map[string]any)
			if s, ok := d["reasoning"].(string); ok {
				reasoning.WriteString(s)
			}
			if s, ok := d["content"].(string); ok {
				text.WriteString(s)
			}
		}
	}
	if reasoning.String() != " bevi funa jita dife" || text.String() != " rape. saze lama" || chunks != 1+8 {
		t.Errorf("stream: reasoning %q content %q chunks %d", reasoning.String(), text.String(), chunks)
	}

	// reasoning_content field name; completions concatenate.
	env2 := startServer(t, map[string]any{"reasoning": map[string]any{"thinking_ratio": 0.6}, "reasoning_field": "reasoning_content"})
	r = env2.post("/v1/chat/completions", helloChat+`,"max_tokens":10}`)
	msg = jsonOf(t, r.Body)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if _, ok := msg["reasoning"]; ok || msg["reasoning_content"] != " bevi funa jita dife" {
		t.Errorf("reasoning_content: %v", msg)
	}
	r = env2.post("/v1/completions", `{"prompt":[1,94002,18,38422,35354,2,18,1,120736,33288,18],"max_tokens":10}`)
	if text, _, _ := choiceText(t, r.Body, 0); text != " bevi funa jita dife rape. saze lama" {
		t.Errorf("completions with reasoning: %q", text)
	}
}

// rankRecorder records the rank of every finished HTTP request.
type rankRecorder struct {
	mu    sync.Mutex
	ranks []int
	obs   [][3]int
}

func (r *rankRecorder) ObserveRequest(rank, n, maxTokens, maxGenerated int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ranks = append(r.ranks, rank)
	r.obs = append(r.obs, [3]int{n, maxTokens, maxGenerated})
}

// S16: DP round robin, then the rank header.
func TestScenario_S16(t *testing.T) {
	rec := &rankRecorder{}
	env := startServer(t, map[string]any{"dp_size": 2}, settings.Deps{Requests: rec})
	for range 4 {
		if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`); r.Status != 200 {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
	}
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`, "X-data-parallel-rank", "1"); r.Status != 200 {
		t.Fatalf("status %d", r.Status)
	}
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`, "X-data-parallel-rank", "2")
	msg, _, param, _ := errorOf(t, r)
	if r.Status != 400 || msg != "data_parallel_rank 2 is out of range [0, 2)" || param != nil {
		t.Errorf("rank 2: %d %s", r.Status, r.Body)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.ranks, []int{0, 1, 0, 1, 1}) {
		t.Errorf("ranks = %v, want [0 1 0 1 1]", rec.ranks)
	}
	if rec.obs[0] != [3]int{1, 2, 2} {
		t.Errorf("observation = %v, want n 1, max 2, generated 2", rec.obs[0])
	}
}

// least_loaded sends work to the rank with the least queued work.
func TestRouting_LeastLoaded(t *testing.T) {
	rec := &rankRecorder{}
	env := startServer(t, map[string]any{"dp_size": 3, "dp_routing": "least_loaded"}, settings.Deps{Requests: rec})
	env.srv.Dispatched(0, 2)
	env.srv.Dispatched(2, 1)
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1}`); r.Status != 200 {
		t.Fatal(r.Body)
	}
	env.srv.Finished(0, 2)
	env.srv.Finished(2, 1)
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1}`); r.Status != 200 {
		t.Fatal(r.Body)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.ranks, []int{1, 0}) {
		t.Errorf("ranks = %v, want [1 0]", rec.ranks)
	}
}

// S18: golden outputs (seed 0, seed 42, n 2).
func TestScenario_S18(t *testing.T) {
	env := startServer(t, nil)
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":4,"return_token_ids":true}`)
	text, finish, m := choiceText(t, r.Body, 0)
	if text != " puzo bevi funa jita" || finish != "length" {
		t.Errorf("S18: %q %q", text, finish)
	}
	ch := m["choices"].([]any)[0].(map[string]any)
	if got := ch["token_ids"].([]any); len(got) != 4 || got[0] != 5398.0 || got[1] != 1152.0 || got[2] != 2165.0 || got[3] != 3225.0 {
		t.Errorf("ids %v", got)
	}
	if p, _, _ := usageOf(m); p != 11 || len(m["prompt_token_ids"].([]any)) != 11 {
		t.Errorf("prompt tokens %v", p)
	}
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":8,"seed":42}`)
	if text, _, _ := choiceText(t, r.Body, 0); text != " nefu voko doke nipe robo vofe vuzi puzu" {
		t.Errorf("seed 42: %q", text)
	}
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":4,"n":2}`)
	if text, _, _ := choiceText(t, r.Body, 1); text != " zulu jopi rozi mubu" {
		t.Errorf("n 2 choice 1: %q", text)
	}
	// Exact non-streaming body, in vLLM's key order.
	r = env.post("/v1/chat/completions", helloChat+`,"max_tokens":4}`, "X-Request-Id", "t")
	const want = `{"id":"chatcmpl-t","object":"chat.completion","created":1760000000,"model":"mocker-model","choices":[{"index":0,"message":{"role":"assistant","content":" puzo bevi funa jita","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":null,"finish_reason":"length","stop_reason":null}],"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":11,"total_tokens":15,"completion_tokens":4,"prompt_tokens_details":null},"prompt_logprobs":null,"kv_transfer_params":null}`
	if r.Body != want {
		t.Errorf("body:\n%s\nwant:\n%s", r.Body, want)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Request-Id") != "" {
		t.Errorf("headers %v", r.Header)
	}
}

// S19: multi-turn prefix caching with cached_tokens.
func TestScenario_S19(t *testing.T) {
	env := startServer(t, map[string]any{"block_size": 4, "enable_prompt_tokens_details": true})
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":4}`)
	text, _, m := choiceText(t, r.Body, 0)
	details := m["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)
	if text != " puzo bevi funa jita" || details["cached_tokens"] != 0.0 {
		t.Fatalf("turn 1: %s", r.Body)
	}
	turn2 := `{"messages":[{"role":"user","content":"Hello!"},{"role":"assistant","content":" puzo bevi funa jita"},{"role":"user","content":"More"}],"max_tokens":2,"return_token_ids":true}`
	r = env.post("/v1/chat/completions", turn2)
	m = jsonOf(t, r.Body)
	p, _, _ := usageOf(m)
	details = m["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)
	if p != 27 || details["cached_tokens"] != 12.0 {
		t.Errorf("turn 2: prompt %v cached %v", p, details["cached_tokens"])
	}
	prompt := m["prompt_token_ids"].([]any)
	want := []float64{1, 94002, 18, 38422, 35354, 2, 18, 1, 120736, 33288, 18, 5398, 1152, 2165, 3225}
	for i, id := range want {
		if prompt[i] != id {
			t.Errorf("turn 2 prompt[:15] = %v, want %v", prompt[:15], want)
			break
		}
	}
	// Streamed usage carries the details too.
	r = env.post("/v1/chat/completions", strings.Replace(turn2, `"max_tokens":2`, `"max_tokens":2,"stream":true,"stream_options":{}`, 1))
	ev := sseEvents(t, r.Body)
	usage := jsonOf(t, ev[len(ev)-2])["usage"].(map[string]any)
	if usage["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 24.0 {
		// The second turn-2 request hits turn 2's own cached prompt blocks.
		t.Errorf("streamed usage %v", usage)
	}
}
