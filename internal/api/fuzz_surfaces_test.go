package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// postFuzz sends one fuzzed JSON body through the handler.
func postFuzz(handler http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

// FuzzSurfaceHandlers sends arbitrary bodies to /v1/responses,
// /v1/messages and /v1/embeddings through the whole stack and checks that
// every answer is a 200 of the endpoint's form or an error in the
// endpoint's own shape (OpenAI's, Anthropic's for /v1/messages): never a
// panic, never another status.
func FuzzSurfaceHandlers(f *testing.F) {
	for _, seed := range []struct {
		route uint8
		body  string
	}{
		{0, `{"input":"hi","max_output_tokens":3}`},
		{0, `{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}],"stream":true,"max_output_tokens":4}`},
		{0, `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}],"tool_choice":"required","stream":true}`},
		{0, `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"array","maxItems":2}}},"instructions":"be"}`},
		{0, `{"input":[{"type":"bogus"}]}`},
		{1, `{"model":"mocker-model","max_tokens":3,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{1, `{"model":"mocker-model","max_tokens":50,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`},
		{1, `{"model":"mocker-model","messages":[]}`},
		{2, `{"input":["a","b"],"encoding_format":"base64","dimensions":7}`},
		{2, `{"input":[[1,2],[3]]}`},
		{2, `{"input":[]}`},
	} {
		f.Add([]byte(seed.body), seed.route)
	}
	handler := startFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		path := []string{"/v1/responses", "/v1/messages", "/v1/embeddings"}[route%3]
		rec := postFuzz(handler, path, body)
		out := rec.Body.Bytes()
		switch rec.Code {
		case 200:
			if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				end := map[string]string{"/v1/responses": "event: response.completed\n", "/v1/messages": "event: message_stop\n"}[path]
				if end == "" || !bytes.Contains(out, []byte(end)) {
					t.Fatalf("%s stream without its closing event: %q", path, tail(out))
				}
				return
			}
			if !json.Valid(out) {
				t.Fatalf("200 with invalid JSON: %q", tail(out))
			}
		case 400, 404, 413:
			if path == "/v1/messages" {
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(out, &e); err != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
					t.Fatalf("%d without Anthropic's error shape: %q", rec.Code, out)
				}
				return
			}
			var e wire.ErrorBody
			if err := json.Unmarshal(out, &e); err != nil || e.Error.Code != rec.Code || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%d without vLLM's error shape: %q", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for %s %q: %q", rec.Code, path, body, tail(out))
		}
	})
}
