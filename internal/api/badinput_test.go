package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Every kind of bad input, in the order the checks run (docs/http-api.md):
// status, exact message, type and param; then the server still serves
// normally.
func TestBadInput(t *testing.T) {
	env := startServer(t, map[string]any{"max_request_body_bytes": 2048})
	const chat, compl = "/v1/chat/completions", "/v1/completions"
	msgs := `"messages":[{"role":"user","content":"Hello!"}]`
	tooManyStops := `["` + strings.Repeat(`a","`, 64) + `a"]`
	tests := []struct {
		name    string
		path    string
		ctype   string
		body    string
		headers []string
		status  int
		typ     string
		msg     string // exact; a trailing "*" means prefix
		param   any
	}{
		{"no content type", chat, "", `{` + msgs + `}`, nil, 400, "Bad Request", "Unsupported Media Type: Only 'application/json' is allowed", nil},
		{"text/plain", chat, "text/plain", `{` + msgs + `}`, nil, 400, "Bad Request", "Unsupported Media Type: Only 'application/json' is allowed", nil},
		{"json with charset", chat, "Application/JSON; charset=utf-8", `{` + msgs + `,"max_tokens":1}`, nil, 200, "", "", nil},
		{"json with charset UTF8", chat, "application/json; charset=UTF8", `{` + msgs + `,"max_tokens":1}`, nil, 200, "", "", nil},
		// Any other charset would be parsed as UTF-8 bytes: refused.
		{"json in utf-16", chat, "application/json; charset=utf-16", "\xff\xfe{\x00}\x00", nil, 400, "Bad Request", `Unsupported Media Type: charset "utf-16" is not supported; the body must be UTF-8 JSON`, nil},
		{"json in latin-1", chat, "application/json; charset=ISO-8859-1", `{` + msgs + `,"max_tokens":1}`, nil, 400, "Bad Request", `Unsupported Media Type: charset "ISO-8859-1" is not supported; the body must be UTF-8 JSON`, nil},
		{"malformed JSON", chat, "", `{"messages":`, nil, 400, "Bad Request", "Invalid JSON body: unexpected end of JSON input", nil},
		{"empty body", chat, "", ``, nil, 400, "Bad Request", "Invalid JSON body: unexpected end of JSON input", nil},
		{"syntax error", chat, "", `{"messages":x}`, nil, 400, "Bad Request", "Invalid JSON body: *", nil},
		{"trailing data", chat, "", `{` + msgs + `} {}`, nil, 400, "Bad Request", "Invalid JSON body: invalid character '{' after top-level value", nil},
		{"array body", chat, "", `[1,2]`, nil, 400, "Bad Request", "Request body must be a JSON object", nil},
		{"null body", chat, "", `null`, nil, 400, "Bad Request", "Request body must be a JSON object", nil},
		{"missing messages", chat, "", `{"max_tokens":3}`, nil, 400, "Bad Request", "Field required: messages", "messages"},
		{"missing prompt", compl, "", `{"max_tokens":3}`, nil, 400, "Bad Request", "Field required: prompt", "prompt"},
		{"messages not array", chat, "", `{"messages":{}}`, nil, 400, "Bad Request", "Invalid type for field 'messages': expected array", "messages"},
		{"string for int", chat, "", `{` + msgs + `,"max_tokens":"5"}`, nil, 400, "Bad Request", "Invalid type for field 'max_tokens': expected integer", "max_tokens"},
		{"float for int", chat, "", `{` + msgs + `,"max_tokens":5.5}`, nil, 400, "Bad Request", "Invalid type for field 'max_tokens': expected integer", "max_tokens"},
		{"integral float for int", chat, "", `{` + msgs + `,"max_tokens":2.0}`, nil, 200, "", "", nil},
		{"bool for int", chat, "", `{` + msgs + `,"n":true}`, nil, 400, "Bad Request", "Invalid type for field 'n': expected integer", "n"},
		{"string for bool", chat, "", `{` + msgs + `,"stream":"yes"}`, nil, 400, "Bad Request", "Invalid type for field 'stream': expected boolean", "stream"},
		{"string for number", chat, "", `{` + msgs + `,"temperature":"hot"}`, nil, 400, "Bad Request", "Invalid type for field 'temperature': expected number", "temperature"},
		{"nested type", chat, "", `{` + msgs + `,"stream":true,"stream_options":{"include_usage":1}}`, nil, 400, "Bad Request", "Invalid type for field 'stream_options.include_usage': expected boolean", "stream_options.include_usage"},
		{"model not string", chat, "", `{` + msgs + `,"model":1}`, nil, 400, "Bad Request", "Invalid type for field 'model': expected string", "model"},
		{"seed beyond int64", chat, "", `{` + msgs + `,"seed":9223372036854775808}`, nil, 400, "Bad Request", "Invalid type for field 'seed': expected integer", "seed"},
		{"seed 1e30", chat, "", `{` + msgs + `,"seed":1e30}`, nil, 400, "Bad Request", "Invalid type for field 'seed': expected integer", "seed"},
		{"seed min int64", chat, "", `{` + msgs + `,"seed":-9223372036854775808,"max_tokens":1}`, nil, 200, "", "", nil},
		{"messages empty", chat, "", `{"messages":[]}`, nil, 400, "BadRequestError", "messages must contain at least one message", "messages"},
		{"message without role", chat, "", `{"messages":[{"role":"user","content":"a"},{"content":"x"}]}`, nil, 400, "Bad Request", "Field required: messages[1].role", "messages[1].role"},
		{"role not string", chat, "", `{"messages":[{"role":1,"content":"x"}]}`, nil, 400, "Bad Request", "Invalid type for field 'messages[0].role': expected string", "messages[0].role"},
		{"image part of no URL scheme", chat, "", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, nil, 400, "BadRequestError", "The URL must be either a HTTP, data or file URL.", "messages[0].content[0]"},
		{"unknown part type", chat, "", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"x"}}]}]}`, nil, 400, "BadRequestError", "Unsupported content part type: supported are text, image_url, input_image, input_audio, audio_url, video_url, image_embeds and audio_embeds.", "messages[0].content[0].type"},
		{"text parts ok", chat, "", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hello!"}]}],"max_tokens":1}`, nil, 200, "", "", nil},
		{"prompt empty string", compl, "", `{"prompt":""}`, nil, 400, "BadRequestError", "prompt must not be empty", "prompt"},
		{"prompt empty list", compl, "", `{"prompt":[]}`, nil, 400, "BadRequestError", "prompt must not be empty", "prompt"},
		{"prompt empty id list", compl, "", `{"prompt":[[]]}`, nil, 400, "BadRequestError", "prompt must not be empty", "prompt"},
		{"prompt wrong type", compl, "", `{"prompt":5}`, nil, 400, "Bad Request", "Invalid type for field 'prompt': expected string", "prompt"},
		{"token id out of vocabulary", compl, "", `{"prompt":[1,131072]}`, nil, 400, "BadRequestError", "Token id 131072 is out of vocabulary", "prompt"},
		{"negative token id", compl, "", `{"prompt":[[5],[-1]]}`, nil, 400, "BadRequestError", "Token id -1 is out of vocabulary", "prompt"},
		{"n 0", chat, "", `{` + msgs + `,"n":0}`, nil, 400, "BadRequestError", "n must be at least 1, got 0.", "n"},
		{"n huge", chat, "", `{` + msgs + `,"n":1000000}`, nil, 400, "BadRequestError", "n must be at most 128, got 1000000.", "n"},
		{"max_tokens 0", chat, "", `{` + msgs + `,"max_tokens":0}`, nil, 400, "BadRequestError", "max_tokens must be at least 1, got 0.", "max_tokens"},
		{"max_completion_tokens -1", chat, "", `{` + msgs + `,"max_completion_tokens":-1,"max_tokens":5}`, nil, 400, "BadRequestError", "max_completion_tokens must be at least 1, got -1.", "max_completion_tokens"},
		{"max_tokens huge", chat, "", `{` + msgs + `,"max_tokens":2147483647}`, nil, 400, "BadRequestError", "max_tokens=2147483647 cannot be greater than max_model_len=max_total_tokens=32768. Please request fewer output tokens. (parameter=max_tokens, value=2147483647)", "max_tokens"},
		{"min_tokens negative", chat, "", `{` + msgs + `,"min_tokens":-1}`, nil, 400, "BadRequestError", "min_tokens must be greater than or equal to 0, got -1.", "min_tokens"},
		{"min_tokens above max", chat, "", `{` + msgs + `,"min_tokens":10,"max_tokens":5}`, nil, 400, "BadRequestError", "min_tokens must be less than or equal to max_tokens=5, got 10.", "min_tokens"},
		{"temperature negative", chat, "", `{` + msgs + `,"temperature":-0.5}`, nil, 400, "BadRequestError", "temperature must be non-negative, got -0.5.", "temperature"},
		{"top_p 0", chat, "", `{` + msgs + `,"top_p":0}`, nil, 400, "BadRequestError", "top_p must be in (0, 1], got 0.", "top_p"},
		{"top_p 1.5", compl, "", `{"prompt":"a","top_p":1.5}`, nil, 400, "BadRequestError", "top_p must be in (0, 1], got 1.5.", "top_p"},
		{"top_k -2", chat, "", `{` + msgs + `,"top_k":-2}`, nil, 400, "BadRequestError", "top_k must be -1 (disable), or at least 1, got -2.", "top_k"},
		{"top_k 0 accepted", chat, "", `{` + msgs + `,"top_k":0,"max_tokens":1}`, nil, 200, "", "", nil},
		{"min_p 2", chat, "", `{` + msgs + `,"min_p":2}`, nil, 400, "BadRequestError", "min_p must be in [0, 1], got 2.", "min_p"},
		{"frequency_penalty", chat, "", `{` + msgs + `,"frequency_penalty":2.5}`, nil, 400, "BadRequestError", "frequency_penalty must be in [-2, 2], got 2.5.", "frequency_penalty"},
		{"presence_penalty", chat, "", `{` + msgs + `,"presence_penalty":-3}`, nil, 400, "BadRequestError", "presence_penalty must be in [-2, 2], got -3.", "presence_penalty"},
		{"repetition_penalty", chat, "", `{` + msgs + `,"repetition_penalty":0}`, nil, 400, "BadRequestError", "repetition_penalty must be greater than zero, got 0.", "repetition_penalty"},
		{"top_logprobs 21", chat, "", `{` + msgs + `,"logprobs":true,"top_logprobs":21}`, nil, 400, "BadRequestError", "top_logprobs must be between 0 and 20, got 21.", "top_logprobs"},
		{"top_logprobs without logprobs", chat, "", `{` + msgs + `,"top_logprobs":2}`, nil, 400, "BadRequestError", "when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs"},
		{"completions logprobs -1", compl, "", `{"prompt":"a","logprobs":-1}`, nil, 400, "BadRequestError", "logprobs must be between 0 and 20, got -1.", "logprobs"},
		{"too many stop strings", chat, "", `{` + msgs + `,"stop":` + tooManyStops + `}`, nil, 400, "BadRequestError", "stop must contain at most 64 strings", "stop"},
		{"empty stop string", chat, "", `{` + msgs + `,"stop":[""]}`, nil, 400, "BadRequestError", "stop strings must not be empty", "stop"},
		{"long stop string", chat, "", `{` + msgs + `,"stop":"` + strings.Repeat("x", 1025) + `"}`, nil, 400, "BadRequestError", "stop strings must be at most 1024 bytes, got 1025", "stop"},
		{"bad stop token id", chat, "", `{` + msgs + `,"stop_token_ids":[131072]}`, nil, 400, "BadRequestError", "Token id 131072 is out of vocabulary", "stop_token_ids"},
		{"truncate 0", chat, "", `{` + msgs + `,"truncate_prompt_tokens":0}`, nil, 400, "BadRequestError", "truncate_prompt_tokens must be between 1 and 32768, got 0.", "truncate_prompt_tokens"},
		{"cache_salt empty", chat, "", `{` + msgs + `,"cache_salt":""}`, nil, 400, "BadRequestError", "cache_salt must be a non-empty string", "cache_salt"},
		{"dp rank out of range", chat, "", `{` + msgs + `}`, []string{"X-data-parallel-rank", "1"}, 400, "BadRequestError", "data_parallel_rank 1 is out of range [0, 1)", nil},
		{"dp rank not int", chat, "", `{` + msgs + `}`, []string{"X-data-parallel-rank", "x"}, 400, "BadRequestError", "data_parallel_rank x is out of range [0, 1)", nil},
		{"unknown model", chat, "", `{` + msgs + `,"model":"gpt-4"}`, nil, 404, "NotFoundError", "The model `gpt-4` does not exist.", "model"},
		{"model before values", chat, "", `{"messages":[],"model":"gpt-4"}`, nil, 404, "NotFoundError", "The model `gpt-4` does not exist.", "model"},
		{"types before model", chat, "", `{"messages":[],"model":"gpt-4","n":"2"}`, nil, 400, "Bad Request", "Invalid type for field 'n': expected integer", "n"},
		{"stream_options without stream", chat, "", `{` + msgs + `,"stream_options":{"include_usage":true}}`, nil, 400, "BadRequestError", "Stream options can only be defined when `stream=True`.", "stream_options"},
		{"priority under fcfs", chat, "", `{` + msgs + `,"priority":1}`, nil, 400, "BadRequestError", "Got priority 1 but Priority scheduling is not enabled.", "priority"},
		{"continue_final_message", chat, "", `{` + msgs + `,"continue_final_message":true}`, nil, 400, "BadRequestError", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.", nil},
		{"prompt_logprobs", compl, "", `{"prompt":"a","prompt_logprobs":1}`, nil, 400, "BadRequestError", "prompt_logprobs is not supported by mocker-server", "prompt_logprobs"},
		{"suffix", compl, "", `{"prompt":"a","suffix":"b"}`, nil, 400, "BadRequestError", "suffix is not currently supported", "suffix"},
		{"best_of", compl, "", `{"prompt":"a","best_of":2}`, nil, 400, "BadRequestError", "best_of is not supported", "best_of"},
		{"context length (text)", chat, "", `{` + msgs + `,"max_tokens":32760}`, nil, 400, "BadRequestError", "This model's maximum context length is 32768 tokens. However, you requested 32760 output tokens and your prompt contains at least 9 input tokens, for a total of at least 32769 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=9)", "input_tokens"},
		{"body too large", chat, "", `{` + msgs + `,"x":"` + strings.Repeat("x", 3000) + `"}`, nil, 413, "Request Entity Too Large", "Request body exceeds 2048 bytes", nil},
		{"unknown fields ignored", chat, "", `{` + msgs + `,"max_tokens":1,"foo":{"bar":[1]},"guided_json":{},"user":5}`, nil, 200, "", "", nil},
		{"disaggregation fields on an aggregated worker", chat, "", `{` + msgs + `,"max_tokens":1,"kv_transfer_params":{"do_remote_decode":true},"bootstrap_host":"h","bootstrap_port":1,"bootstrap_room":18446744073709551615}`, nil, 400, "BadRequestError", "This server does not serve disaggregated prefill/decode: kv_transfer_params and bootstrap_* fields need a worker started with --kv-transfer-config or --disaggregation-mode prefill|decode.", "kv_transfer_params"},
		{"bootstrap fields on an aggregated worker", chat, "", `{` + msgs + `,"bootstrap_room":7}`, nil, 400, "BadRequestError", "This server does not serve disaggregated prefill/decode: *", "kv_transfer_params"},
		{"bootstrap_room out of range", chat, "", `{` + msgs + `,"bootstrap_room":18446744073709551616}`, nil, 400, "Bad Request", "*", "bootstrap_room"},
		{"kv_transfer_params not an object", chat, "", `{` + msgs + `,"kv_transfer_params":[1]}`, nil, 400, "Bad Request", "Invalid type for field 'kv_transfer_params': expected object", "kv_transfer_params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype := tt.ctype
			if ctype == "" && !strings.HasPrefix(tt.name, "no content type") {
				ctype = "application/json"
			}
			r := env.do("POST", tt.path, ctype, tt.body, tt.headers...)
			if r.Status != tt.status {
				t.Fatalf("status = %d, want %d; body %s", r.Status, tt.status, r.Body)
			}
			if tt.status == 200 {
				return
			}
			msg, typ, param, code := errorOf(t, r)
			if want, prefix := strings.CutSuffix(tt.msg, "*"); prefix && !strings.HasPrefix(msg, want) || !prefix && msg != tt.msg {
				t.Errorf("message = %q, want %q", msg, tt.msg)
			}
			if typ != tt.typ || code != float64(tt.status) {
				t.Errorf("type/code = %q/%v, want %q/%d", typ, code, tt.typ, tt.status)
			}
			if param != tt.param {
				t.Errorf("param = %#v, want %#v", param, tt.param)
			}
			if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("headers %v", r.Header)
			}
		})
	}

	// Engine state is intact: a normal request works and nothing leaked.
	r := env.post(chat, `{`+msgs+`,"max_tokens":4}`)
	if text, _, _ := choiceText(t, r.Body, 0); text != " puzo bevi funa jita" {
		t.Errorf("after bad input: %s", r.Body)
	}
	testutil.WaitFor(t, time.Second, "idle engines", env.idle)
}

// Absurd but well-typed values allocate nothing in proportion to the value.
func TestBadInput_NoProportionalAllocation(t *testing.T) {
	env := startServer(t, nil)
	for _, body := range []string{
		helloChat + `,"max_tokens":2147483647,"n":1000000}`,
		`{"prompt":"a","max_tokens":9223372036854775807}`,
		helloChat + `,"truncate_prompt_tokens":9223372036854775807}`,
		helloChat + `,"min_tokens":9223372036854775807,"max_tokens":3}`,
	} {
		if r := env.post("/v1/completions", body); r.Status != 400 && r.Status != 200 {
			t.Errorf("%s: %d", body, r.Status)
		}
		if r := env.post("/v1/chat/completions", body); r.Status != 400 {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
	}
}

// Small context and KV pool: the token-id context message and the KV
// capacity pre-check (the engine's own rejection rule, asked before
// submitting).
func TestBadInput_ContextAndCapacity(t *testing.T) {
	env := startServer(t, map[string]any{"max_model_len": 16, "num_gpu_blocks": 2, "block_size": 4})
	cases := []struct{ body, path, msg string }{
		{helloChat + `,"max_tokens":10}`, "/v1/chat/completions",
			"This model's maximum context length is 16 tokens. However, you requested 10 output tokens and your prompt contains at least 7 input tokens, for a total of at least 17 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=7)"},
		{`{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, "/v1/completions",
			"This model's maximum context length is 16 tokens. However, you requested 0 output tokens and your prompt contains 17 input tokens, for a total of 17 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=17)"},
		{`{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`, "/v1/completions", "max_tokens must be at least 1, got 0."},
		{helloChat + `}`, "/v1/chat/completions", "This request needs 3 KV cache blocks but each engine has only 2 blocks of 4 tokens."},
	}
	for _, c := range cases {
		r := env.post(c.path, c.body)
		if msg, typ, _, _ := errorOf(t, r); r.Status != 400 || msg != c.msg || typ != "BadRequestError" {
			t.Errorf("%s: %d %q", c.body, r.Status, msg)
		}
	}
	// truncate_prompt_tokens keeps the last tokens, so the request fits.
	r := env.post("/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"truncate_prompt_tokens":4,"max_tokens":2,"return_token_ids":true}`)
	var resp struct {
		Choices []struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(r.Body), &resp); err != nil || r.Status != 200 || len(resp.Choices) != 1 ||
		len(resp.Choices[0].PromptTokenIDs) != 4 || resp.Choices[0].PromptTokenIDs[0] != 14 {
		t.Errorf("truncated: %d %s", r.Status, r.Body)
	}
}
