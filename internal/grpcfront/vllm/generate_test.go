package vllm_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// The same request over gRPC and over HTTP gets the same token ids: one
// seeded plan, one pipeline. Streamed chunks, the non-streaming complete
// message and /v1/completions with return_token_ids all agree, for the
// server's seed and for a request seed.
func TestGenerateMatchesHTTPCompletions(t *testing.T) {
	e := start(t, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	prompt := seq(100, 40)
	for _, seed := range []*int32{nil, i32(1234)} {
		sp := &vllmpb.SamplingParams{MaxTokens: u32(30), Seed: seed, IgnoreEos: true}
		streamed, err := e.generate(t, ctx, tokenized("s", prompt, sp, true))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := e.generate(t, ctx, tokenized("w", prompt, sp, false))
		if err != nil {
			t.Fatal(err)
		}
		body := map[string]any{"prompt": prompt, "max_tokens": 30, "return_token_ids": true, "ignore_eos": true}
		if seed != nil {
			body["seed"] = *seed
		}
		b, _ := json.Marshal(body)
		var resp struct {
			Choices []struct {
				TokenIDs     []uint32 `json:"token_ids"`
				FinishReason string   `json:"finish_reason"`
			} `json:"choices"`
		}
		if code := e.post(t, "/v1/completions", string(b), &resp); code != 200 || len(resp.Choices) != 1 {
			t.Fatalf("HTTP: %d %+v", code, resp)
		}
		want := resp.Choices[0].TokenIDs
		if len(want) != 30 {
			t.Fatalf("HTTP gave %d ids", len(want))
		}
		name := fmt.Sprintf("seed %v", seed)
		if seed != nil {
			name = fmt.Sprintf("seed %d", *seed)
		}
		if got := streamed.ids(); !slices.Equal(got, want) {
			t.Errorf("%s: streamed ids %v\nHTTP ids %v", name, got, want)
		}
		if got := whole.ids(); len(whole.chunks) != 0 || !slices.Equal(got, want) {
			t.Errorf("%s: non-streaming: %d chunks, ids %v\nHTTP ids %v", name, len(whole.chunks), got, want)
		}
		for _, g := range []generation{streamed, whole} {
			c := g.complete
			if c == nil || c.GetFinishReason() != resp.Choices[0].FinishReason || c.GetPromptTokens() != 40 {
				t.Errorf("%s: complete %v, HTTP finish_reason %q", name, c, resp.Choices[0].FinishReason)
			}
		}
		// vLLM's DELTA stream: the complete message repeats the last chunk.
		if last := streamed.chunks[len(streamed.chunks)-1]; !slices.Equal(last, streamed.complete.GetOutputIds()) ||
			streamed.complete.GetCompletionTokens() != uint32(len(last)) {
			t.Errorf("%s: complete %v does not repeat the last chunk %v", name, streamed.complete, last)
		}
		if whole.complete.GetCompletionTokens() != 30 {
			t.Errorf("%s: non-streaming completion_tokens %d", name, whole.complete.GetCompletionTokens())
		}
	}
}

// A text prompt is tokenized by the server (add_special_tokens), like a
// completions prompt.
func TestGenerateTextPrompt(t *testing.T) {
	e := start(t, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	req := &vllmpb.GenerateRequest{RequestId: "t", Input: &vllmpb.GenerateRequest_Text{Text: "hello there"},
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(5), IgnoreEos: true}}
	g, err := e.generate(t, ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Choices []struct {
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
		Usage struct {
			PromptTokens uint32 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	e.post(t, "/v1/completions", `{"prompt":"hello there","max_tokens":5,"ignore_eos":true,"return_token_ids":true}`, &resp)
	if !slices.Equal(g.ids(), resp.Choices[0].TokenIDs) || g.complete.GetPromptTokens() != resp.Usage.PromptTokens {
		t.Errorf("gRPC %v (prompt %d), HTTP %v (prompt %d)", g.ids(), g.complete.GetPromptTokens(),
			resp.Choices[0].TokenIDs, resp.Usage.PromptTokens)
	}
}

// A repeated prompt reports its prefix-cache hit as cached_tokens (vLLM's
// num_cached_tokens), the count /v1/completions reports for it.
func TestGenerateReportsCachedTokens(t *testing.T) {
	e := start(t, map[string]any{"enable_prompt_tokens_details": true})
	ctx := ctxTimeout(t, 30*time.Second)
	prompt := seq(5, 200)
	sp := &vllmpb.SamplingParams{MaxTokens: u32(4)}
	first, err := e.generate(t, ctx, tokenized("a", prompt, sp, false))
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.generate(t, ctx, tokenized("b", prompt, sp, true))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 4})
	var resp struct {
		Usage struct {
			Details struct {
				Cached uint32 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	e.post(t, "/v1/completions", string(b), &resp)
	// 200 tokens in 64-token blocks: three whole blocks are reused.
	if c := first.complete.GetCachedTokens(); c != 0 {
		t.Errorf("first request: cached_tokens %d", c)
	}
	if c := second.complete.GetCachedTokens(); c != 192 || c != resp.Usage.Details.Cached {
		t.Errorf("repeated prompt: cached_tokens %d, HTTP %d, want 192", c, resp.Usage.Details.Cached)
	}
}

// n > 1 runs every sample on the engine; as vLLM's servicer, the stream
// reports the first, which is /v1/completions' choice 0.
func TestGenerateReportsTheFirstOfNSamples(t *testing.T) {
	e := start(t, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	prompt := seq(9, 16)
	g, err := e.generate(t, ctx, tokenized("n", prompt, &vllmpb.SamplingParams{MaxTokens: u32(12), N: 3, IgnoreEos: true}, true))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 12, "n": 3, "ignore_eos": true, "return_token_ids": true})
	var resp struct {
		Choices []struct {
			Index    int      `json:"index"`
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
	}
	e.post(t, "/v1/completions", string(b), &resp)
	if len(resp.Choices) != 3 || resp.Choices[0].Index != 0 || !slices.Equal(g.ids(), resp.Choices[0].TokenIDs) {
		t.Errorf("gRPC %v, HTTP choices %+v", g.ids(), resp.Choices)
	}
}

// The constraint oneof is vLLM's structured outputs: a choice constraint
// plans the ids /v1/completions plans under structured_outputs.choice
// (whose text is one of the choices).
func TestGenerateHonoursAChoiceConstraint(t *testing.T) {
	e := start(t, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	sp := &vllmpb.SamplingParams{MaxTokens: u32(20), Constraint: &vllmpb.SamplingParams_Choice{
		Choice: &vllmpb.ChoiceConstraint{Choices: []string{"alpha beta", "gamma"}}}}
	g, err := e.generate(t, ctx, tokenized("c", seq(1, 8), sp, false))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Choices []struct {
			Text         string   `json:"text"`
			TokenIDs     []uint32 `json:"token_ids"`
			FinishReason string   `json:"finish_reason"`
		} `json:"choices"`
	}
	e.post(t, "/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8],"max_tokens":20,"return_token_ids":true,`+
		`"structured_outputs":{"choice":["alpha beta","gamma"]}}`, &resp)
	c := resp.Choices[0]
	if c.Text != "alpha beta" && c.Text != "gamma" {
		t.Fatalf("HTTP constrained text %q", c.Text)
	}
	if !slices.Equal(g.ids(), c.TokenIDs) || g.complete.GetFinishReason() != c.FinishReason {
		t.Errorf("gRPC %v (%s), HTTP %v (%s)", g.ids(), g.complete.GetFinishReason(), c.TokenIDs, c.FinishReason)
	}
	free, err := e.generate(t, ctx, tokenized("f", seq(1, 8), &vllmpb.SamplingParams{MaxTokens: u32(20)}, false))
	if err != nil || slices.Equal(free.ids(), g.ids()) {
		t.Errorf("the constraint changed nothing: %v, %v", free.ids(), err)
	}
}
