package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// The golden transcripts are byte-level SSE bodies for a fixed request id,
// seed, clock and configuration (reasoning framing on, so that both block
// kinds appear). The byte stream does not depend on timing: events are the
// same however the engine's passes group them into writes.
var goldenStreams = []struct {
	file, path, body string
}{
	{"responses_stream.sse", "/v1/responses",
		`{"model":"mocker-model","input":"Hello!","instructions":"Be brief.","max_output_tokens":8,"stream":true,"seed":7}`},
	{"messages_stream.sse", "/v1/messages",
		`{"model":"mocker-model","max_tokens":8,"system":"Be brief.","messages":[{"role":"user","content":"Hello!"}],"stream":true}`},
	{"responses_function_call_stream.sse", "/v1/responses",
		`{"model":"mocker-model","input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":` + weatherSchema +
			`}],"tool_choice":"required","stream":true,"seed":7}`},
	{"messages_tool_use_stream.sse", "/v1/messages",
		`{"model":"mocker-model","max_tokens":200,"messages":[{"role":"user","content":"Weather?"}],"tools":[{"name":"get_weather","input_schema":` +
			weatherSchema + `}],"tool_choice":{"type":"any"},"stream":true}`},
}

func TestGolden_SurfaceStreamsAreByteIdentical(t *testing.T) {
	env := startServer(t, map[string]any{"reasoning": map[string]any{"thinking_ratio": 0.5}, "seed": 42})
	for _, gs := range goldenStreams {
		t.Run(gs.file, func(t *testing.T) {
			r := env.post(gs.path, gs.body, "X-Request-Id", "golden")
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			path := filepath.Join("testdata", "golden", gs.file)
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(r.Body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-golden to create it)", err)
			}
			if r.Body != string(want) {
				t.Errorf("%s differs from the golden transcript:\n%s", gs.file, firstDiff(string(want), r.Body))
			}
			checkVLLMFieldOrder(t, string(want))
		})
	}
}

// firstDiff shows where two texts part.
func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(i-80, 0)
	return "want …" + want[lo:min(i+80, len(want))] + "\n got …" + got[lo:min(i+80, len(got))]
}

// vllmKeyOrder lists, per SSE event type, the top-level keys of the JSON
// vLLM writes and their order: pydantic dumps fields in declaration order,
// so these are the field lists of openai-python's event models (Responses,
// which vLLM dumps whole) and of vLLM's AnthropicStreamEvent with the fields
// each event sets (Messages, dumped with exclude_unset). Written from those
// sources, not from the server's output.
var vllmKeyOrder = map[string][]string{
	"response.created":                       {"response", "sequence_number", "type"},
	"response.in_progress":                   {"response", "sequence_number", "type"},
	"response.completed":                     {"response", "sequence_number", "type"},
	"response.output_item.added":             {"item", "output_index", "sequence_number", "type"},
	"response.output_item.done":              {"item", "output_index", "sequence_number", "type"},
	"response.content_part.added":            {"content_index", "item_id", "output_index", "part", "sequence_number", "type"},
	"response.content_part.done":             {"content_index", "item_id", "output_index", "part", "sequence_number", "type"},
	"response.output_text.delta":             {"content_index", "delta", "item_id", "logprobs", "output_index", "sequence_number", "type"},
	"response.output_text.done":              {"content_index", "item_id", "logprobs", "output_index", "sequence_number", "text", "type"},
	"response.reasoning_text.delta":          {"content_index", "delta", "item_id", "output_index", "sequence_number", "type"},
	"response.reasoning_text.done":           {"content_index", "item_id", "output_index", "sequence_number", "text", "type"},
	"response.function_call_arguments.delta": {"delta", "item_id", "output_index", "sequence_number", "type"},
	"response.function_call_arguments.done":  {"arguments", "item_id", "name", "output_index", "sequence_number", "type"},
	"message_start":                          {"type", "message"},
	"content_block_start":                    {"type", "content_block", "index"},
	"content_block_delta":                    {"type", "delta", "index"},
	"content_block_stop":                     {"type", "index"},
	"message_delta":                          {"type", "delta", "usage"},
	"message_stop":                           {"type"},
}

// vllmNestedKeyOrder lists the keys of nested objects by a path of the
// form "<event type>.<field>" (or a Responses item by its type).
var vllmNestedKeyOrder = map[string][]string{
	// ResponsesResponse (vLLM's protocol.py), as response.* events carry it.
	"response": {"id", "created_at", "incomplete_details", "instructions", "metadata", "model", "object",
		"output", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p", "background",
		"max_output_tokens", "max_tool_calls", "previous_response_id", "prompt", "reasoning",
		"service_tier", "status", "text", "top_logprobs", "truncation", "usage", "user",
		"input_messages", "output_messages"},
	"item:reasoning":      {"id", "summary", "type", "content", "encrypted_content", "status"},
	"item:message":        {"id", "content", "role", "status", "type"},
	"item:function_call":  {"arguments", "call_id", "name", "type", "id", "status"},
	"part:output_text":    {"annotations", "text", "type", "logprobs"},
	"part:reasoning_text": {"text", "type"},
	// vLLM's message_start.message lacks type and role; the mock sends them
	// where Anthropic's API does (docs/http-api.md).
	"message_start.message":          {"id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "usage"},
	"message_start.message.usage":    {"input_tokens", "output_tokens"},
	"content_block_start.block":      {"type", "text|thinking"},
	"content_block_start.tool_use":   {"type", "id", "name", "input"},
	"content_block_delta.input_json": {"type", "partial_json"},
	"message_delta.usage":            {"input_tokens", "output_tokens"},
	"message_delta.delta":            {"stop_reason"},
	"content_block_delta.text":       {"type", "text"},
	"content_block_delta.thinking":   {"type", "thinking"},
	"content_block_delta.signature":  {"type", "signature"},
}

func checkKeys(t *testing.T, what string, raw []byte, want []string) {
	t.Helper()
	got := keys(t, string(raw))
	if len(want) == 2 && strings.Contains(want[1], "|") && len(got) == 2 {
		if slices.Contains(strings.Split(want[1], "|"), got[1]) {
			want = []string{want[0], got[1]}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want vLLM's %v", what, got, want)
	}
}

// checkVLLMFieldOrder parses a transcript's events ("event: T\ndata: J")
// and checks every event's and nested object's key order.
func checkVLLMFieldOrder(t *testing.T, body string) {
	t.Helper()
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	seq := 0
	for _, ev := range events {
		typ, data, ok := strings.Cut(strings.TrimPrefix(ev, "event: "), "\ndata: ")
		if !ok || !strings.HasPrefix(ev, "event: ") {
			t.Fatalf("malformed event %q", ev)
		}
		want, known := vllmKeyOrder[typ]
		if !known {
			t.Errorf("event type %q is not one vLLM sends", typ)
			continue
		}
		raw := []byte(data)
		checkKeys(t, typ, raw, want)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var typed string
		_ = json.Unmarshal(m["type"], &typed)
		if typed != typ {
			t.Errorf("event %q carries type %q", typ, typed)
		}
		if sn, ok := m["sequence_number"]; ok {
			if string(sn) != wire.Itoa(seq) {
				t.Errorf("%s sequence_number %s, want %d", typ, sn, seq)
			}
			seq++
		}
		if r, ok := m["response"]; ok {
			checkKeys(t, typ+".response", r, vllmNestedKeyOrder["response"])
		}
		for _, field := range []string{"item", "part"} {
			if r, ok := m[field]; ok {
				var kind struct{ Type string }
				_ = json.Unmarshal(r, &kind)
				checkKeys(t, typ+"."+field, r, vllmNestedKeyOrder[field+":"+kind.Type])
			}
		}
		switch typ {
		case "message_start":
			checkKeys(t, "message_start.message", m["message"], vllmNestedKeyOrder["message_start.message"])
			var msg map[string]json.RawMessage
			_ = json.Unmarshal(m["message"], &msg)
			checkKeys(t, "message_start.message.usage", msg["usage"], vllmNestedKeyOrder["message_start.message.usage"])
		case "content_block_start":
			var blk struct{ Type string }
			_ = json.Unmarshal(m["content_block"], &blk)
			order := vllmNestedKeyOrder["content_block_start.block"]
			if blk.Type == "tool_use" {
				order = vllmNestedKeyOrder["content_block_start.tool_use"]
			}
			checkKeys(t, typ+".content_block", m["content_block"], order)
		case "content_block_delta":
			var d struct{ Type string }
			_ = json.Unmarshal(m["delta"], &d)
			checkKeys(t, typ+".delta", m["delta"], vllmNestedKeyOrder["content_block_delta."+strings.TrimSuffix(d.Type, "_delta")])
		case "message_delta":
			checkKeys(t, typ+".delta", m["delta"], vllmNestedKeyOrder["message_delta.delta"])
			checkKeys(t, typ+".usage", m["usage"], vllmNestedKeyOrder["message_delta.usage"])
		}
	}
}
