package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Limits, stops and natural ends are counted in the loaded tokenizer's ids:
// each expected id and text comes from the reference (textref.mjs).
func TestE2E_RealTokenizerLimitsAndStops(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	conv := qwen3Conversations()[1]
	ref := runTextRef(t, dir, refRequest{Chats: []refChat{conv},
		Encode: []refEncode{{Text: "<|im_end|>", Special: false}}})
	promptLen := len(ref.Chats[0].IDs)
	eos := ref.Encode[0].IDs
	if len(eos) != 1 {
		t.Fatalf("reference encodes Qwen3's EOS text as %v, want one id", eos)
	}
	const maxModelLen = 96
	srv := startServe(t, loadConfig(t, map[string]any{"tokenizer": dir, "served_model_name": []string{"qwen3"},
		"max_model_len": maxModelLen, "output_len_mode": "random", "natural_output_len": 12, "log_level": "error"}), 0)

	t.Run("max_model_len counts the real prompt ids", func(t *testing.T) {
		fits := maxModelLen - promptLen
		var ans chatAnswer
		if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, map[string]any{"max_tokens": fits, "ignore_eos": true}), &ans); status != 200 {
			t.Fatalf("max_tokens %d with a %d-token prompt (max_model_len %d): %d %s", fits, promptLen, maxModelLen, status, raw)
		}
		if ans.Usage.CompletionTokens != fits {
			t.Errorf("completion_tokens = %d, want %d", ans.Usage.CompletionTokens, fits)
		}
		status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, map[string]any{"max_tokens": fits + 1}), nil)
		want := regexp.MustCompile(fmt.Sprintf(`you requested %d output tokens and your prompt contains (at least )?%d input tokens`, fits+1, promptLen))
		if status != 400 || !want.Match(raw) {
			t.Errorf("max_tokens %d: %d %s; want 400 matching %q", fits+1, status, raw, want)
		}
	})

	// The same seed, once without and once with a stop id taken from the
	// first output: the output ends at that id's first occurrence.
	t.Run("stop_token_ids match real ids", func(t *testing.T) {
		base := map[string]any{"max_tokens": 40, "seed": 11, "ignore_eos": true, "return_token_ids": true}
		var free chatAnswer
		if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, base), &free); status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
		ids := free.Choices[0].TokenIDs
		k := 5
		for k < len(ids) && slices.Index(ids, ids[k]) != k {
			k++
		}
		if k == len(ids) {
			t.Fatalf("no id of %v occurs first after position 5", ids)
		}
		stopped := map[string]any{"stop_token_ids": []uint32{ids[k]}}
		for key, v := range base {
			stopped[key] = v
		}
		var ans chatAnswer
		if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, stopped), &ans); status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
		c := ans.Choices[0]
		if !slices.Equal(c.TokenIDs, ids[:k+1]) || c.FinishReason != "stop" || fmt.Sprint(c.StopReason) != fmt.Sprint(ids[k]) {
			t.Errorf("stop_token_ids [%d]: ids %v finish %q stop_reason %v; want ids %v, stop, %d",
				ids[k], c.TokenIDs, c.FinishReason, c.StopReason, ids[:k+1], ids[k])
		}
		dref := runTextRef(t, dir, refRequest{Decode: []refDecode{{IDs: ids[:k], Skip: true}}})
		if c.Message.Content != dref.Decode[0] {
			t.Errorf("text before the stop id = %q, reference decode %q", c.Message.Content, dref.Decode[0])
		}
		status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, map[string]any{"stop_token_ids": []int{151669}}), nil)
		if status != 400 || !strings.Contains(string(raw), "out of vocabulary") {
			t.Errorf("stop id 151669 (Qwen3 has 151669 ids): %d %s; want 400 out of vocabulary", status, raw)
		}
		if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, map[string]any{"stop_token_ids": []int{151668}, "max_tokens": 1}), nil); status != 200 {
			t.Errorf("stop id 151668 (the last id): %d %s", status, raw)
		}
	})

	// --output-len-mode random: a natural end's last id is the tokenizer's
	// EOS, counted but not rendered.
	t.Run("natural ends finish with the real EOS", func(t *testing.T) {
		var outputs [][]uint32
		var texts []string
		for seed := 1; seed <= 8; seed++ {
			var ans chatAnswer
			if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(conv, map[string]any{
				"max_tokens": 40, "seed": seed, "return_token_ids": true}), &ans); status != 200 {
				t.Fatalf("%d %s", status, raw)
			}
			c := ans.Choices[0]
			if c.FinishReason != "stop" || c.StopReason != nil {
				continue
			}
			if n := len(c.TokenIDs); n == 0 || c.TokenIDs[n-1] != eos[0] || ans.Usage.CompletionTokens != n {
				t.Errorf("seed %d: natural end ids %v (completion_tokens %d), want the last to be EOS %d", seed, c.TokenIDs, ans.Usage.CompletionTokens, eos[0])
				continue
			}
			if strings.Contains(c.Message.Content, "<|im_end|>") {
				t.Errorf("seed %d: EOS rendered in %q", seed, c.Message.Content)
			}
			outputs = append(outputs, c.TokenIDs)
			texts = append(texts, c.Message.Content)
		}
		if len(outputs) == 0 {
			t.Fatal("no natural end in 8 seeds with natural_output_len 12 and max_tokens 40")
		}
		var dreq refRequest
		for _, ids := range outputs {
			dreq.Decode = append(dreq.Decode, refDecode{IDs: ids, Skip: true})
		}
		dref := runTextRef(t, dir, dreq)
		for i, text := range texts {
			if text != dref.Decode[i] {
				t.Errorf("natural end %d: text %q, reference decode (skip special) %q", i, text, dref.Decode[i])
			}
		}
	})
}
