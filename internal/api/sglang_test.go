package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func startSGLang(t *testing.T, overlay map[string]any) *testEnv {
	t.Helper()
	o := map[string]any{"engine_type": "sglang", "max_model_len": 8192, "model": "sg-model"}
	for k, v := range overlay {
		o[k] = v
	}
	return startServer(t, o)
}

// sglangResult is the part of a /generate answer the tests read.
type sglangResultJSON struct {
	Index     *int     `json:"index"`
	Text      string   `json:"text"`
	OutputIDs []uint32 `json:"output_ids"`
	MetaInfo  struct {
		ID           string `json:"id"`
		FinishReason *struct {
			Type    string `json:"type"`
			Length  *int   `json:"length"`
			Matched any    `json:"matched"`
		} `json:"finish_reason"`
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		CachedTokens     int `json:"cached_tokens"`
	} `json:"meta_info"`
}

func decodeSGLangBody(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
}

// TestSGLangGenerate_MatchesTheCompletionsEndpoint checks /generate against
// the independent /v1/completions rendering of the same request: same
// prompt, same token budget, so the same planned text and token count.
func TestSGLangGenerate_MatchesTheCompletionsEndpoint(t *testing.T) {
	e := startSGLang(t, nil)
	res := e.post("/generate", `{"text":"The capital of France is","sampling_params":{"max_new_tokens":12,"temperature":0}}`)
	if res.Status != http.StatusOK {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	var got sglangResultJSON
	decodeSGLangBody(t, res.Body, &got)
	ref := e.post("/v1/completions", `{"model":"sg-model","prompt":"The capital of France is","max_tokens":12,"temperature":0,"return_token_ids":true}`)
	var want struct {
		Choices []struct {
			Text     string   `json:"text"`
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	decodeSGLangBody(t, ref.Body, &want)
	if got.Text != want.Choices[0].Text || fmt.Sprint(got.OutputIDs) != fmt.Sprint(want.Choices[0].TokenIDs) {
		t.Errorf("/generate text %q ids %v; /v1/completions %q %v", got.Text, got.OutputIDs, want.Choices[0].Text, want.Choices[0].TokenIDs)
	}
	m := got.MetaInfo
	if m.PromptTokens != want.Usage.PromptTokens || m.CompletionTokens != 12 || m.FinishReason == nil ||
		m.FinishReason.Type != "length" || m.FinishReason.Length == nil || *m.FinishReason.Length != 12 || got.Index != nil {
		t.Errorf("meta_info %+v (finish %+v), want %d prompt tokens, 12 completion tokens, length 12", m, m.FinishReason, want.Usage.PromptTokens)
	}
	// The same prompt again hits its cached prefix (page size 1: all but the
	// last prompt token).
	var again sglangResultJSON
	decodeSGLangBody(t, e.post("/generate", `{"text":"The capital of France is","sampling_params":{"max_new_tokens":12}}`).Body, &again)
	if again.MetaInfo.CachedTokens != m.PromptTokens-1 {
		t.Errorf("second request cached %d tokens, want %d", again.MetaInfo.CachedTokens, m.PromptTokens-1)
	}
}

func TestSGLangGenerate_InputShapes(t *testing.T) {
	e := startSGLang(t, nil)
	tests := []struct {
		name, body string
		want       int // results (0: one object)
		prompt     int // prompt tokens of the first
		maxNew     int
	}{
		{"input_ids", `{"input_ids":[5,6,7],"sampling_params":{"max_new_tokens":4}}`, 0, 3, 4},
		{"default max_new_tokens", `{"input_ids":[5,6,7]}`, 0, 3, 128},
		{"batch of texts", `{"text":["a b c","d e"],"sampling_params":{"max_new_tokens":2}}`, 2, -1, 2},
		{"batch of id lists", `{"input_ids":[[1,2],[3,4,5]],"sampling_params":{"max_new_tokens":2}}`, 2, 2, 2},
		{"n choices", `{"input_ids":[9,9],"sampling_params":{"max_new_tokens":3,"n":3}}`, 3, 2, 3},
		{"rid", `{"input_ids":[9,9],"rid":"my-rid","sampling_params":{"max_new_tokens":1}}`, 0, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.post("/generate", tc.body)
			if res.Status != http.StatusOK {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			var list []sglangResultJSON
			if tc.want == 0 {
				var one sglangResultJSON
				decodeSGLangBody(t, res.Body, &one)
				list = append(list, one)
			} else {
				decodeSGLangBody(t, res.Body, &list)
				if len(list) != tc.want {
					t.Fatalf("%d results, want %d", len(list), tc.want)
				}
			}
			for i, r := range list {
				if tc.want > 0 && (r.Index == nil || *r.Index != i) {
					t.Errorf("result %d has index %v", i, r.Index)
				}
				if len(r.OutputIDs) != tc.maxNew || r.MetaInfo.CompletionTokens != tc.maxNew {
					t.Errorf("result %d: %d output ids, %d completion tokens, want %d", i, len(r.OutputIDs), r.MetaInfo.CompletionTokens, tc.maxNew)
				}
			}
			if strings.Contains(tc.body, `"rid"`) && list[0].MetaInfo.ID != "my-rid" {
				t.Errorf("meta_info.id %q, want the rid", list[0].MetaInfo.ID)
			}
			if tc.prompt > 0 && list[0].MetaInfo.PromptTokens != tc.prompt {
				t.Errorf("prompt tokens %d, want %d", list[0].MetaInfo.PromptTokens, tc.prompt)
			}
		})
	}
}

func TestSGLangGenerate_Stream(t *testing.T) {
	e := startSGLang(t, nil)
	res := e.post("/generate", `{"text":"stream me","stream":true,"sampling_params":{"max_new_tokens":6}}`)
	if res.Status != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q", res.Status, res.Header.Get("Content-Type"))
	}
	events := sseEvents(t, res.Body)
	if events[len(events)-1] != "[DONE]" || len(events) < 2 {
		t.Fatalf("events %q", events)
	}
	prev := ""
	for i, ev := range events[:len(events)-1] {
		var r sglangResultJSON
		decodeSGLangBody(t, ev, &r)
		if !strings.HasPrefix(r.Text, prev) {
			t.Errorf("event %d text %q does not extend %q (cumulative stream)", i, r.Text, prev)
		}
		prev = r.Text
		last := i == len(events)-2
		if (r.MetaInfo.FinishReason != nil) != last {
			t.Errorf("event %d finish_reason %+v", i, r.MetaInfo.FinishReason)
		}
		if last && (len(r.OutputIDs) != 6 || r.MetaInfo.FinishReason.Type != "length") {
			t.Errorf("last event %+v", r)
		}
	}
	var whole sglangResultJSON
	decodeSGLangBody(t, e.post("/generate", `{"text":"stream me","sampling_params":{"max_new_tokens":6}}`).Body, &whole)
	if whole.Text != prev {
		t.Errorf("streamed text %q, non-streamed %q", prev, whole.Text)
	}
}

func TestSGLangGenerate_BadInput(t *testing.T) {
	e := startSGLang(t, nil)
	tests := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"no input", `{"sampling_params":{}}`, 400, "Either text, input_ids or input_embeds should be provided."},
		{"both inputs", `{"text":"a","input_ids":[1]}`, 400, "Only one of text, input_ids or input_embeds should be provided."},
		{"not an object", `[1]`, 400, "Request body must be a JSON object"},
		{"bad max_new_tokens", `{"text":"a","sampling_params":{"max_new_tokens":"x"}}`, 400, ""},
		{"too long", `{"input_ids":[` + strings.Repeat("1,", 9000) + `1]}`, 400, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.post("/generate", tc.body)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tc.status, res.Body)
			}
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			decodeSGLangBody(t, res.Body, &body)
			if body.Error.Message == "" || (tc.msg != "" && body.Error.Message != tc.msg) {
				t.Errorf("error message %q, want %q", body.Error.Message, tc.msg)
			}
		})
	}
}

func TestSGLangInfoEndpoints(t *testing.T) {
	e := startSGLang(t, map[string]any{"sglang": map[string]any{"schedule_policy": "lpm", "max_running_requests": 7}})
	info := jsonOf(t, e.Get("/get_model_info").Body)
	if info["model_path"] != "sg-model" || info["is_generation"] != true {
		t.Errorf("model info %v", info)
	}
	for _, path := range []string{"/get_server_info", "/server_info"} {
		res := e.Get(path)
		s := jsonOf(t, res.Body)
		if res.Status != 200 || s["page_size"] != 1.0 || s["schedule_policy"] != "lpm" || s["max_running_requests"] != 7.0 {
			t.Errorf("%s: %d %v", path, res.Status, s)
		}
		states, _ := s["internal_states"].([]any)
		if len(states) != 1 {
			t.Errorf("%s internal_states %v", path, s["internal_states"])
		}
	}
}

func TestSGLangFlushCacheAndHealthGenerate(t *testing.T) {
	e := startSGLang(t, map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 1.0, "fixed_decode_ms": 20.0})
	if res := e.Get("/health_generate"); res.Status != http.StatusOK {
		t.Errorf("/health_generate %d %s", res.Status, res.Body)
	}
	e.post("/generate", `{"text":"warm the cache","sampling_params":{"max_new_tokens":2}}`)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		res := e.do(method, "/flush_cache", "", "")
		if res.Status != http.StatusOK || !strings.HasPrefix(res.Body, "Cache flushed.") {
			t.Errorf("%s /flush_cache: %d %q", method, res.Status, res.Body)
		}
	}
	// After the flush the same prompt hits nothing.
	var r sglangResultJSON
	decodeSGLangBody(t, e.post("/generate", `{"text":"warm the cache","sampling_params":{"max_new_tokens":2}}`).Body, &r)
	if r.MetaInfo.CachedTokens != 0 {
		t.Errorf("cached %d tokens after a flush", r.MetaInfo.CachedTokens)
	}
	// A flush while a request runs is refused.
	end := e.holdStream()
	res := e.post("/flush_cache", "")
	end()
	if res.Status != http.StatusBadRequest || !strings.HasPrefix(res.Body, "Cache not flushed.") {
		t.Errorf("flush with a running request: %d %q", res.Status, res.Body)
	}
	testutil.WaitFor(t, 2*time.Second, "idle", e.idle)
}

func TestSGLangEndpointsOnlyInSGLangMode(t *testing.T) {
	e := startServer(t, nil)
	for _, path := range []string{"/get_server_info", "/get_model_info", "/health_generate", "/flush_cache"} {
		if res := e.Get(path); res.Status != http.StatusNotFound {
			t.Errorf("vllm mode %s: %d", path, res.Status)
		}
	}
	if res := e.post("/generate", `{"text":"a"}`); res.Status != http.StatusNotFound {
		t.Errorf("vllm mode /generate: %d", res.Status)
	}
}

// With --api-key, SGLang mode's native routes need the key as SGLang's
// add_api_key_middleware requires it (all but /health* and /metrics).
func TestSGLangRoutesNeedTheAPIKey(t *testing.T) {
	e := startSGLang(t, map[string]any{"api_key": []any{"sk-s"}})
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":1}}`},
		{http.MethodPost, "/flush_cache", ""},
		{http.MethodGet, "/flush_cache", ""},
		{http.MethodGet, "/get_server_info", ""},
		{http.MethodGet, "/server_info", ""},
		{http.MethodGet, "/get_model_info", ""},
	}
	for _, r := range routes {
		for _, key := range []string{"", "wrong"} {
			var h []string
			if key != "" {
				h = []string{"Authorization", "Bearer " + key}
			}
			if res := e.do(r.method, r.path, "application/json", r.body, h...); res.Status != http.StatusUnauthorized ||
				res.Body != `{"error":"Unauthorized"}` {
				t.Errorf("%s %s with key %q: %d %q, want 401", r.method, r.path, key, res.Status, res.Body)
			}
		}
		if res := e.do(r.method, r.path, "application/json", r.body, "Authorization", "Bearer sk-s"); res.Status != http.StatusOK {
			t.Errorf("%s %s with the key: %d %.200s", r.method, r.path, res.Status, res.Body)
		}
	}
	// The probe stays open, as in SGLang.
	if res := e.Get("/health_generate"); res.Status != http.StatusOK {
		t.Errorf("/health_generate without a key: %d", res.Status)
	}
}

// TestHealthProbe_TimeoutAndClientGone: the one-token probe behind
// /health_generate and the gRPC HealthCheck reports a token that does not
// come in time as ErrProbeTimeout and a context that ends first as its
// error (prefill here takes a minute).
func TestHealthProbe_TimeoutAndClientGone(t *testing.T) {
	env := startServer(t, map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 60000.0, "fixed_decode_ms": 1.0})
	if err := env.srv.HealthProbe(context.Background(), 50*time.Millisecond); !errors.Is(err, pipeline.ErrProbeTimeout) {
		t.Errorf("probe against a minute's prefill with a 50 ms timeout: %v, want ErrProbeTimeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := env.srv.HealthProbe(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("probe whose context ends first: %v, want context.DeadlineExceeded", err)
	}
}
