package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The resource budgets of issue 34: each hostile request is refused with
// a 400 in the surface's shape that names the limit's flag, before any
// work is queued, and the server keeps serving.

// promptList is a JSON list of k one-word prompts.
func promptList(k int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(`"a",`, k), ",") + "]"
}

// refusedFast posts body to path and checks a 400 naming flag within
// limit; it returns the message.
func refusedFast(t *testing.T, env *testEnv, path, body, flag string, limit time.Duration) string {
	t.Helper()
	start := time.Now()
	r := env.post(path, body)
	took := time.Since(start)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("%s: status %d, want 400: %.300s", path, r.Status, r.Body)
	}
	msg, typ, _, _ := errorOf(t, r)
	if !strings.Contains(msg, flag) || typ != "BadRequestError" {
		t.Errorf("%s: error %s %q does not name %s", path, typ, msg, flag)
	}
	if took > limit {
		t.Errorf("%s: refused after %v, want < %v", path, took, limit)
	}
	return msg
}

func TestBudgets_PromptsAndSequencesPerRequest(t *testing.T) {
	env := startServer(t, nil) // the default budgets: 2,048 prompts, 4,096 sequences
	// The H1 request: 2,000 prompts × n=128 (17 KB) once wedged an
	// engine for 65 s after a disconnect.
	hostile := `{"prompt":` + promptList(2000) + `,"n":128,"max_tokens":5}`
	if len(hostile) > 20<<10 {
		t.Fatalf("hostile body is %d bytes", len(hostile))
	}
	msg := refusedFast(t, env, "/v1/completions", hostile, "--max-sequences-per-request", 50*time.Millisecond)
	if !strings.Contains(msg, "256000") {
		t.Errorf("message %q does not say how many sequences were asked for", msg)
	}
	refusedFast(t, env, "/v1/completions", `{"prompt":`+promptList(2049)+`,"max_tokens":1}`,
		"--max-prompts-per-request", 200*time.Millisecond)
	if !env.idle() {
		t.Error("a refused request left work on an engine")
	}
	// At the limits the request is served.
	if r := env.post("/v1/completions", `{"prompt":`+promptList(32)+`,"n":128,"max_tokens":1}`); r.Status != http.StatusOK {
		t.Errorf("32 prompts × n=128 (4,096 sequences): %d %.200s", r.Status, r.Body)
	}

	small := startServer(t, map[string]any{"max_prompts_per_request": 3, "max_sequences_per_request": 8})
	for _, c := range []struct {
		prompts, n int
		flag       string // "" = served
	}{{3, 2, ""}, {2, 4, ""}, {4, 1, "--max-prompts-per-request"}, {3, 3, "--max-sequences-per-request"}} {
		body := fmt.Sprintf(`{"prompt":%s,"n":%d,"max_tokens":1}`, promptList(c.prompts), c.n)
		if c.flag == "" {
			if r := small.post("/v1/completions", body); r.Status != http.StatusOK {
				t.Errorf("%d prompts × n=%d: %d %.200s", c.prompts, c.n, r.Status, r.Body)
			}
			continue
		}
		refusedFast(t, small, "/v1/completions", body, c.flag, time.Second)
	}
	// Chat is one conversation: n alone counts against the sequences.
	refusedFast(t, small, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":9}`,
		"--max-sequences-per-request", time.Second)
}

func TestBudgets_EmbeddingInputs(t *testing.T) {
	env := startServer(t, nil) // default: OpenAI's 2,048
	// H2: 100,000 inputs once pushed the server past 4 GB.
	refusedFast(t, env, "/v1/embeddings", `{"input":`+promptList(100_000)+`}`, "--max-embedding-inputs", 100*time.Millisecond)
	if r := env.post("/v1/embeddings", `{"input":`+promptList(2048)+`}`); r.Status != http.StatusOK {
		t.Errorf("2,048 inputs: %d %.200s", r.Status, r.Body)
	}

	small := startServer(t, map[string]any{"max_embedding_inputs": 3})
	if r := small.post("/v1/embeddings", `{"input":[[1,2],[3],[4]]}`); r.Status != http.StatusOK {
		t.Errorf("3 inputs: %d %.200s", r.Status, r.Body)
	}
	refusedFast(t, small, "/v1/embeddings", `{"input":[[1,2],[3],[4],[5]]}`, "--max-embedding-inputs", time.Second)
}

// enumSchema is a JSON schema of one string property whose enum has k
// values of about 6 bytes each.
func enumSchema(k int) string {
	vals := make([]string, k)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%04d"`, i)
	}
	return `{"type":"object","properties":{"x":{"enum":[` + strings.Join(vals, ",") + `]}},"required":["x"]}`
}

func TestBudgets_SchemaLimitsNameTheirFlags(t *testing.T) {
	env := startServer(t, nil)
	// H3: a 29 KB enum once took 114 s to check.
	schema := enumSchema(3800)
	if len(schema) < 29_000 || len(schema) > 64<<10 {
		t.Fatalf("enum schema is %d bytes", len(schema))
	}
	chat := func(extra string) string {
		return `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,` + extra + `}`
	}
	refusedFast(t, env, "/v1/chat/completions",
		chat(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":`+schema+`}}`),
		"--max-schema-enum", 50*time.Millisecond)
	refusedFast(t, env, "/v1/completions", `{"prompt":"hi","max_tokens":5,"structured_outputs":{"json":`+schema+`}}`,
		"--max-schema-enum", 50*time.Millisecond)

	small := startServer(t, map[string]any{"max_schema_bytes": 200, "max_schema_enum": 3,
		"enable_auto_tool_choice": true, "tool_call_parser": "hermes"})
	refusedFast(t, small, "/v1/chat/completions", chat(`"structured_outputs":{"json":`+enumSchema(20)+`}`),
		"--max-schema-bytes", time.Second)
	refusedFast(t, small, "/v1/chat/completions", chat(`"structured_outputs":{"json":`+enumSchema(4)+`}`),
		"--max-schema-enum", time.Second)
	// Tool parameters are schemas too.
	refusedFast(t, small, "/v1/chat/completions",
		chat(`"tools":[{"type":"function","function":{"name":"f","parameters":`+enumSchema(4)+`}}]`),
		"--max-schema-enum", time.Second)
	if r := small.post("/v1/chat/completions", chat(`"structured_outputs":{"json":`+enumSchema(3)+`}`)); r.Status != http.StatusOK {
		t.Errorf("3 enum values: %d %.200s", r.Status, r.Body)
	}
}

func TestBudgets_SchemaStepsNameTheirFlag(t *testing.T) {
	// H4: nested anyOf over an unsatisfiable leaf; with a tiny step budget
	// the search stops at once and names --max-schema-steps.
	leaf := `{"type":"integer","minimum":5,"maximum":4}`
	s := leaf
	for range 12 {
		s = `{"anyOf":[` + s + `,` + s + `]}`
	}
	env := startServer(t, map[string]any{"max_schema_steps": 1000, "max_schema_bytes": 1 << 20})
	refusedFast(t, env, "/v1/completions", `{"prompt":"hi","max_tokens":5,"structured_outputs":{"json":`+s+`}}`,
		"--max-schema-steps", time.Second)
}

func TestBudgets_LoRAAdapters(t *testing.T) {
	env := startLoRAServer(t, map[string]any{"max_lora_adapters": 2})
	load := func(name string) response {
		return env.post("/v1/load_lora_adapter", `{"lora_name":"`+name+`","lora_path":"/adapters/`+name+`"}`)
	}
	for _, name := range []string{"a", "b"} {
		if r := load(name); r.Status != http.StatusOK {
			t.Fatalf("load %s: %d %s", name, r.Status, r.Body)
		}
	}
	r := load("c")
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "--max-lora-adapters") {
		t.Fatalf("third adapter: %d %s", r.Status, r.Body)
	}
	if _, ok := env.modelCards()["c"]; ok {
		t.Error("the refused adapter is served")
	}
	// Unloading frees a place.
	if r := env.post("/v1/unload_lora_adapter", `{"lora_name":"a"}`); r.Status != http.StatusOK {
		t.Fatalf("unload: %d %s", r.Status, r.Body)
	}
	if r := load("c"); r.Status != http.StatusOK {
		t.Errorf("after an unload: %d %s", r.Status, r.Body)
	}
}

func TestBudgets_ResponsesStoreIsBoundedByBytes(t *testing.T) {
	const budget = 64 << 10
	env := startServer(t, map[string]any{"max_responses_store_bytes": budget})
	big := strings.Repeat("word ", 2000) // 10 KB of input per response
	const n = 30
	for i := range n {
		r := env.post("/v1/responses", `{"input":"`+big+`","max_output_tokens":2}`, "X-Request-Id", fmt.Sprint("r", i))
		if r.Status != http.StatusOK {
			t.Fatalf("response %d: %d %.200s", i, r.Status, r.Body)
		}
	}
	if r := env.Get("/v1/responses/resp_r0"); r.Status != http.StatusNotFound {
		t.Errorf("the oldest response is still stored after %d × 10 KB in a %d-byte store", n, budget)
	}
	if r := env.Get(fmt.Sprint("/v1/responses/resp_r", n-1)); r.Status != http.StatusOK {
		t.Errorf("the newest response is gone: %d", r.Status)
	}
	// The newest continues as before.
	if r := env.post("/v1/responses", fmt.Sprintf(`{"input":"more","previous_response_id":"resp_r%d","max_output_tokens":2}`, n-1)); r.Status != http.StatusOK {
		t.Errorf("previous_response_id of a kept response: %d %.200s", r.Status, r.Body)
	}
}
