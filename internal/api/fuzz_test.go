package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// startFuzzServer runs one server (live engine, no simulated delay) for
// every execution of a fuzz process, stopped when the fuzz target ends.
func startFuzzServer(f *testing.F, extra ...map[string]any) http.Handler {
	o := map[string]any{"max_model_len": 96, "num_gpu_blocks": 64, "block_size": 16,
		"max_request_body_bytes": 65536}
	for _, e := range extra {
		for k, v := range e {
			o[k] = v
		}
	}
	cfg := testConfig(f, o)
	eng, err := engine.New(cfg.EngineConfig(nil), engine.Options{})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	f.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return NewServer(testOptions(cfg), []*engine.Engine{eng}, settings.Deps{Now: fixedNow}).Handler()
}

// FuzzGenerateHandler sends arbitrary bodies through the whole HTTP stack
// (router, middleware, decoder, parameter parsing, engine, streaming) of
// both generation endpoints and /tokenize, and checks that every answer is
// a 200 of the right form or an error in vLLM's shape: never a panic
// (which recovery would turn into a 500), never another status.
func FuzzGenerateHandler(f *testing.F) {
	for _, seed := range []string{
		helloChat + `,"max_tokens":3}`,
		helloChat + `,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		helloChat + `,"n":3,"logprobs":true,"top_logprobs":5,"max_completion_tokens":4,"stop":["a"],"seed":7}`,
		helloChat + `,"response_format":{"type":"json_object"},"tools":[{"type":"function"}],"return_token_ids":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url"}]}]}`,
		`{"prompt":"hello","max_tokens":2,"echo":true,"logprobs":2}`,
		`{"prompt":[[1,2,3],[4,5]],"max_tokens":2,"stream":true,"n":2}`,
		`{"prompt":["a","b"],"truncate_prompt_tokens":1,"min_tokens":1,"max_tokens":1,"ignore_eos":true}`,
		`{"prompt":"x","stop_token_ids":[1,2],"priority":3,"cache_salt":"s","temperature":2.5,"top_p":0.1}`,
		`{"prompt":[4294967296]}`, `{"prompt":""}`, `{}`, `[]`, `null`, `{"prompt":"a"} x`, `{"n":1e400}`,
		helloChat + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}}}],"tool_choice":"required","stream":true,"max_tokens":9}`,
		helloChat + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"1"}]}`,
		`{"prompt":"x","guided_regex":"[a-c]{2,4}-\\d+","stream":true}`,
		helloChat + `,"structured_outputs":{"choice":["a","b"]},"n":2}`,
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(1))
	}
	handler := startFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		path := []string{"/v1/completions", "/v1/chat/completions", "/tokenize"}[route%3]
		rec := postFuzz(handler, path, body)
		out := rec.Body.Bytes()
		switch rec.Code {
		case 200:
			if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
					t.Fatalf("stream without [DONE]: %q", tail(out))
				}
				return
			}
			if !json.Valid(out) {
				t.Fatalf("200 with invalid JSON: %q", tail(out))
			}
		case 400, 404, 413:
			var e wire.ErrorBody
			if err := json.Unmarshal(out, &e); err != nil || e.Error.Code != rec.Code || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%d without vLLM's error shape: %q", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for %s %q: %q", rec.Code, path, body, tail(out))
		}
	})
}

func tail(b []byte) []byte { return b[max(0, len(b)-300):] }
